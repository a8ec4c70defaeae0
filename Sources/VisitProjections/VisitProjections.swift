// VisitProjections
