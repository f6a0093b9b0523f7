package logging

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestNewSetsTheLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		want zapcore.Level // the lowest level enabled
	}{
		{"debug", zapcore.DebugLevel},
		{"info", zapcore.InfoLevel},
		{"", zapcore.InfoLevel},
		{"WARN", zapcore.WarnLevel},
		{"error", zapcore.ErrorLevel},
	} {
		log, err := New(tc.name, "")
		if err != nil {
			t.Fatalf("New(%q): %v", tc.name, err)
		}
		core := log.Core()
		if !core.Enabled(tc.want) {
			t.Errorf("New(%q): %v not enabled", tc.name, tc.want)
		}
		if tc.want > zapcore.DebugLevel && core.Enabled(tc.want-1) {
			t.Errorf("New(%q): %v enabled, want only %v and above", tc.name, tc.want-1, tc.want)
		}
	}
}

func TestNewRefusesAnUnknownLevel(t *testing.T) {
	for _, name := range []string{"loud", "verbose", "infoo"} {
		log, err := New(name, "json")
		if !errors.Is(err, ErrBadLevel) {
			t.Errorf("New(%q) = %v, %v; want an error wrapping ErrBadLevel", name, log, err)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		path := filepath.Join(t.TempDir(), "log")
		log, err := build("info", format, []string{path})
		if err != nil {
			t.Fatal(err)
		}
		log.Error("loading a version", zap.String("db", "mydb"), zap.Error(errors.New("corrupt file")))
		log.Sync()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out := string(b)
		if strings.Contains(out, "stacktrace") || strings.Contains(out, ".go:") && strings.Contains(out, "\n\t") {
			t.Errorf("%s: an error entry carries a stack trace:\n%s", format, out)
		}
		var obj map[string]any
		isJSON := json.Unmarshal(b, &obj) == nil
		if isJSON != (format == "json") {
			t.Errorf("%s: JSON = %v:\n%s", format, isJSON, out)
		}
		if format == "console" && (!strings.Contains(out, "\tERROR\t") || !strings.Contains(out, "loading a version")) {
			t.Errorf("console: %q", out)
		}
	}
	if _, err := New("info", "xml"); !errors.Is(err, ErrBadFormat) {
		t.Errorf("New(info, xml): %v, want ErrBadFormat", err)
	}
}
