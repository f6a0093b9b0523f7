//go:build unix && !linux

package table

func populateFlag(bool) int { return 0 }

// dropMapped does nothing here: the pages stay mapped until unmapped.
func dropMapped([]byte) {}
