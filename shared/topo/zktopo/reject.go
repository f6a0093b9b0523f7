package zktopo

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// maxRejectsKept bounds the rejected entries remembered so that each is
// said once; past it the memory starts afresh (and says them again).
const maxRejectsKept = 10000

// rejects says, once per entry and content, that an entry read from
// ZooKeeper was ignored because it failed validation (topo.ErrInvalid),
// at Warn and in spangle_zk_entries_rejected_total. An entry read again
// unchanged (every leader round reads the assignments) is not said
// again. It is safe for concurrent use.
type rejects struct {
	log     *zap.Logger
	counter *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]string // guarded by mu; path -> the error last said
}

func newRejects(log *zap.Logger, reg prometheus.Registerer) (*rejects, error) {
	r := &rejects{
		log: log,
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_zk_entries_rejected_total",
			Help: "ZooKeeper entries ignored because their data or name failed validation (a bound or the format), by kind; each entry and content counted once.",
		}, []string{"kind"}),
		seen: map[string]string{},
	}
	if reg == nil {
		return r, nil
	}
	if err := reg.Register(r.counter); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, fmt.Errorf("zktopo: registering metrics: %w", err)
		}
		old, ok := are.ExistingCollector.(*prometheus.CounterVec)
		if !ok {
			return nil, fmt.Errorf("zktopo: registering metrics: %w", err)
		}
		r.counter = old // a second Conn on the registry shares it
	}
	return r, nil
}

// reject says that the entry at path, of kind, is ignored for err.
func (r *rejects) reject(kind, path string, err error) {
	msg := err.Error()
	r.mu.Lock()
	said := r.seen[path] == msg
	if !said {
		if len(r.seen) >= maxRejectsKept {
			clear(r.seen)
		}
		r.seen[path] = msg
	}
	r.mu.Unlock()
	if said {
		return
	}
	r.counter.WithLabelValues(kind).Inc()
	r.log.Warn("zktopo: ignoring an invalid entry", zap.String("kind", kind), zap.String("path", path), zap.Error(err))
}

// accept forgets that path was rejected: a later rejection of it is
// said again.
func (r *rejects) accept(path string) {
	r.mu.Lock()
	delete(r.seen, path)
	r.mu.Unlock()
}
