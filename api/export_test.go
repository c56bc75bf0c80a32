package api

// ReadBucketsForTest returns how many per-IP read buckets the server holds.
func ReadBucketsForTest(s *Server) int {
	if s.reads == nil {
		return 0
	}
	return s.reads.buckets.len()
}
