import Postgres

extension VisitReplay {
    /// Rebuilds `projection` from the events on connections of its own, made like `pool`'s but without its
    /// work timeout (a rebuild outlasts any request's), closed when it is done.
    public static func rebuild(_ readModel: VisitReadModel, projection: Projection = .visits, likePool pool: PostgresPool)
        async throws -> Report
    {
        try await PostgresPool.withPool(pool.configuration.withoutWorkTimeout) { own in
            try await VisitReplay(pool: own, readModel: readModel, projection: projection).run()
        }
    }
}
