package daemon

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"spangle/storaged/blockcache"
)

// registerBlockCache exports the node's block cache: hits and misses
// (lookups that read a block from its file), bytes held and the bound.
func registerBlockCache(reg prometheus.Registerer, c *blockcache.Cache) error {
	stat := func(f func(blockcache.Stats) int64) func() float64 {
		return func() float64 { return float64(f(c.Stats())) }
	}
	cs := []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "spangle_storaged_block_cache_hits_total",
			Help: "Data block reads answered by the block cache.",
		}, stat(func(s blockcache.Stats) int64 { return s.Hits })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "spangle_storaged_block_cache_misses_total",
			Help: "Data block reads that went to a table file.",
		}, stat(func(s blockcache.Stats) int64 { return s.Misses })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "spangle_storaged_block_cache_bytes",
			Help: "Bytes of blocks the block cache holds.",
		}, stat(func(s blockcache.Stats) int64 { return s.Bytes })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "spangle_storaged_block_cache_capacity_bytes",
			Help: "The block cache's bound (leveldb.block_cache_size).",
		}, stat(func(s blockcache.Stats) int64 { return s.Capacity })),
	}
	for _, col := range cs {
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("daemon: registering block cache metrics: %w", err)
		}
	}
	return nil
}
