package source

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// s3Metrics counts what an s3:// root asks of the store, so that an
// operator sees a load's traffic, a flaky network (retries) and a wrong
// credential (errors by code) without reading logs.
type s3Metrics struct {
	bytes   prometheus.Counter
	objects prometheus.Counter
	lists   prometheus.Counter
	retries prometheus.Counter
	errors  *prometheus.CounterVec
}

func newS3Metrics(reg prometheus.Registerer) (*s3Metrics, error) {
	m := &s3Metrics{
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_source_s3_read_bytes_total", Help: "Bytes of objects read from the S3 source."}),
		objects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_source_s3_objects_read_total", Help: "Objects read to their end from the S3 source."}),
		lists: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_source_s3_list_calls_total", Help: "Listing requests (ListObjectsV2 pages and HEADs of _SUCCESS) sent to the S3 source."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_source_s3_read_retries_total", Help: "Downloads resumed with a ranged GET after a dropped connection."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_source_s3_errors_total", Help: "Failed S3 requests by S3 error code (network: no answer)."}, []string{"code"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.bytes, err = register(reg, m.bytes); err != nil {
		return nil, err
	}
	if m.objects, err = register(reg, m.objects); err != nil {
		return nil, err
	}
	if m.lists, err = register(reg, m.lists); err != nil {
		return nil, err
	}
	if m.retries, err = register(reg, m.retries); err != nil {
		return nil, err
	}
	if m.errors, err = register(reg, m.errors); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// its name: a second root on the same registry shares the counters.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if old, ok := are.ExistingCollector.(C); ok {
			return old, nil
		}
	}
	return c, fmt.Errorf("source: registering metrics: %w", err)
}
