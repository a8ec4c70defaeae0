import Postgres

/// The pool of PostgreSQL connections the API's use cases run on. The HTTP layer holds it only to build
/// and hand on the use cases, and never takes a connection itself; the name lets it do so without
/// importing the database adapter.
public typealias DatabasePool = PostgresPool

/// The schema's migrations, whose state `/readyz` reports through `DatabaseReadiness`.
public typealias SchemaMigrations = Migrator
