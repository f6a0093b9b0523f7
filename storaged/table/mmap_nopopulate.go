//go:build unix && !linux

package table

func populateFlag(bool) int { return 0 }
