package daemon

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"spangle/storaged/blockcache"
)

// registerBlockCache exports the node's block cache: hits and misses
// (lookups that read a block from its file), bytes held, the bound and
// the memory mapped for buffers.
func registerBlockCache(reg prometheus.Registerer, c *blockcache.Cache) error {
	for _, m := range []struct {
		name, help string
		counter    bool
		value      func(blockcache.Stats) int64
	}{
		{"spangle_storaged_block_cache_hits_total", "Data block reads answered by the block cache.", true,
			func(s blockcache.Stats) int64 { return s.Hits }},
		{"spangle_storaged_block_cache_misses_total", "Data block reads that went to a table file.", true,
			func(s blockcache.Stats) int64 { return s.Misses }},
		{"spangle_storaged_block_cache_bytes", "Bytes of block buffers the block cache holds.", false,
			func(s blockcache.Stats) int64 { return s.Bytes }},
		{"spangle_storaged_block_cache_capacity_bytes", "The block cache's bound (leveldb.block_cache_size).", false,
			func(s blockcache.Stats) int64 { return s.Capacity }},
		{"spangle_storaged_block_cache_mapped_bytes", "Memory the block cache has mapped for its buffers, outside Go's heap.", false,
			func(s blockcache.Stats) int64 { return s.Mapped }},
	} {
		value := func() float64 { return float64(m.value(c.Stats())) }
		var col prometheus.Collector
		if m.counter {
			col = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: m.name, Help: m.help}, value)
		} else {
			col = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: m.name, Help: m.help}, value)
		}
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("daemon: registering block cache metrics: %w", err)
		}
	}
	return nil
}
