package clienttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAppBuildsWithoutServerModules builds a throwaway module that
// imports spangle/client, as an app would (with a replace to this
// checkout), offline, and checks that nothing of the server's comes with
// it: no module at all besides the app and the client.
func TestAppBuildsWithoutServerModules(t *testing.T) {
	clientDir, err := filepath.Abs("../client")
	if err != nil {
		t.Fatal(err)
	}
	app := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(app, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/app\n\ngo 1.26\n\nrequire spangle/client v0.0.0\n\nreplace spangle/client => "+clientDir+"\n")
	write("main.go", `package main

import (
	"fmt"

	"spangle/client"
)

func main() {
	c, err := client.New("http://127.0.0.1:9590", client.Options{})
	fmt.Println(c, err)
}
`)
	run := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	mods := run("list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")
	for _, m := range strings.Fields(mods) {
		if m != "example.com/app" && m != "spangle/client" {
			t.Errorf("the app's build holds module %s", m)
		}
	}
	for _, forbidden := range []string{"zookeeper", "envoy", "aws", "goleveldb", "prometheus", "zap"} {
		if strings.Contains(mods, forbidden) {
			t.Errorf("the app's build holds a %s module", forbidden)
		}
	}
	if all := run("list", "-m", "all"); strings.TrimSpace(all) != "example.com/app\nspangle/client v0.0.0 => "+clientDir {
		t.Errorf("the app's module graph:\n%s", all)
	}
	run("build", "-o", filepath.Join(app, "app"), ".")
}
