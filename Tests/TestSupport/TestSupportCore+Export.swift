// The database-free core (eventually, Gate, Subprocess, withResource, …) comes with `import TestSupport`,
// so a suite that needs the database imports one module.
@_exported import TestSupportCore
