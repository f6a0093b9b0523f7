package source_test

import (
	"testing"

	"spangle/shared/source"
	"spangle/shared/source/sourcetest"
)

func TestLocalSuite(t *testing.T) {
	sourcetest.Run(t, sourcetest.Backend{
		NewRoot: func(t *testing.T) (string, func(source.Options) (source.Source, error)) {
			dir := t.TempDir()
			return dir, func(o source.Options) (source.Source, error) { return source.Open(dir, o) }
		},
	})
}
