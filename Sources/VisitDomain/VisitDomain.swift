// VisitDomain
