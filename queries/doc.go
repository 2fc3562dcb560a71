// Package queries is the read side: one file per query, named after its
// result (link_by_id.go holds LinkByID and LinkByIDHandler), each with the
// small read-model interface it reads. The rules that belong to reading
// live here too: who may see what (access.go), the statistics date rules
// (date_range.go), summaries and top-N (link_summary.go), and whether a
// short link may be followed (link_access.go).
//
// Queries read projections only; they never load aggregates or read the
// event store. Result types are in types.go; the projections that serve
// them return those types. Queries are built once, with the read models
// and the clock, in cmd/linkd/app (Queries), and called by the API.
package queries
