package api

type dashboard struct{ s *Server }

func newDashboard(s *Server) *dashboard { return &dashboard{s: s} }
