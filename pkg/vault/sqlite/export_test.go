package sqlite

// SetObservedCaps lowers the observed-usage caps of s for a test (0 = the
// vault defaults).
func SetObservedCaps(s *Store, clients, dayRows int64) { s.clientCap, s.dayRowCap = clients, dayRows }

func SetObservedRowCap(s *Store, rows int64) { s.rowCap = rows; s.usageRows.Store(-1) }
