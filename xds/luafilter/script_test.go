package luafilter

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"spangle/shared/partitioner"
	"spangle/shared/wire"
)

var testDBs = []DB{
	{Name: "a", Version: "v1", NumPartitions: 1},
	{Name: "b", Version: "v2", NumPartitions: 7},
	{Name: "c_db", Version: "2024-01-01", NumPartitions: 1024},
	{Name: "d", Version: "x", NumPartitions: 1<<31 - 1},
	{Name: "e-1", Version: "v9", NumPartitions: 100003},
}

// luajit finds Debian's luajit, the Lua Envoy embeds. The test never skips
// without it: the script is only trustworthy once LuaJIT has run it.
func luajit(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("luajit")
	if err != nil {
		t.Fatalf("luafilter: luajit not found (%v): install it with `apt-get install luajit` (or `make deps`)", err)
	}
	return p
}

// runLua runs the generated script followed by harness in luajit with
// args, and returns its standard output.
func runLua(t *testing.T, script, harness string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "harness.lua")
	if err := os.WriteFile(file, []byte(script+"\n"+harness), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(luajit(t), append([]string{file}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("luajit: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// routeHarness reads lines "<hex path> <hex pinned version or ->" from
// the file named by its first argument and prints, per line, the
// partition spangle_route gives or "-".
const routeHarness = `
local function unhex(s) return (string.gsub(s, "%x%x", spangle_hexbyte)) end
local out = {}
for line in io.lines(arg[1]) do
  local phex, pin = string.match(line, "^(%x*) (.*)$")
  local pinned = nil
  if pin ~= "-" then pinned = unhex(pin) end
  local p = spangle_route(unhex(phex), pinned)
  if p == nil then out[#out + 1] = "-" else out[#out + 1] = string.format("%d", p) end
end
io.write(table.concat(out, "\n"), "\n")
`

type routeCase struct {
	path   string
	pinned *string
}

// want is what storaged and routerd make of the request: the partition of
// the key, or "-" when Envoy must leave the request to routerd.
func (c routeCase) want(dbs map[string]DB) string {
	p, _, _ := strings.Cut(c.path, "?")
	tg, err := wire.ParsePath(p)
	if err != nil || !tg.HasKey {
		return "-"
	}
	db, ok := dbs[strings.SplitN(p, "/", 3)[1]]
	if !ok || db.Name != tg.DB {
		return "-"
	}
	if c.pinned != nil && *c.pinned != db.Version {
		return "-"
	}
	return strconv.Itoa(partitioner.Partition(tg.Key, db.NumPartitions))
}

// escapeMixed writes key with each byte either raw (when that cannot end
// the path or start an escape) or as %XX in random case.
func escapeMixed(r *rand.Rand, key []byte, all bool) string {
	var b strings.Builder
	for _, c := range key {
		if !all && c != '%' && c != '?' && c != '#' && r.Intn(2) == 0 {
			b.WriteByte(c)
			continue
		}
		s := fmt.Sprintf("%%%02X", c)
		if r.Intn(2) == 0 {
			s = strings.ToLower(s)
		}
		b.WriteString(s)
	}
	return b.String()
}

func randomKey(r *rand.Rand) []byte {
	n := r.Intn(24)
	switch r.Intn(20) {
	case 0:
		n = r.Intn(300)
	case 1:
		n = 0
	}
	key := make([]byte, n)
	for i := range key {
		if r.Intn(3) == 0 {
			key[i] = byte(r.Intn(256))
		} else {
			key[i] = byte(32 + r.Intn(95))
		}
	}
	return key
}

func randomCase(r *rand.Rand, names []string) routeCase {
	db := names[r.Intn(len(names))]
	key := randomKey(r)
	var esc string
	switch r.Intn(4) {
	case 0:
		esc = url.PathEscape(string(key))
	case 1:
		esc = escapeMixed(r, key, true)
	case 2:
		esc = escapeMixed(r, key, false)
	case 3:
		// Broken escapes: a lone '%', a short one, a non-hex one.
		esc = escapeMixed(r, key, false)
		bad := []string{"%", "%4", "%g1", "%%41", "%Z"}[r.Intn(5)]
		i := r.Intn(len(esc) + 1)
		esc = esc[:i] + bad + esc[i:]
	}
	c := routeCase{path: "/" + db + "/" + esc}
	switch r.Intn(10) {
	case 0:
		c.path += "?x=" + strconv.Itoa(r.Intn(100))
	case 1:
		c.path = "/" + db
	case 2:
		v := []string{"v1", "v2", "x", "v9", "2024-01-01", "old"}[r.Intn(6)]
		c.pinned = &v
	}
	return c
}

// TestRouteMatchesGo runs the generated script in LuaJIT over 100,000
// random keys in many escaped forms and checks every partition against
// partitioner.Partition of the key as wire.ParsePath unescapes it.
func TestRouteMatchesGo(t *testing.T) {
	script, err := Script(testDBs)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]DB{}
	names := []string{"zz", "A"} // unknown to the script
	for _, db := range testDBs {
		byName[db.Name] = db
		names = append(names, db.Name)
	}
	r := rand.New(rand.NewSource(5))
	const n = 100000
	cases := make([]routeCase, 0, 2*n)
	for _, p := range []string{"/b/", "/b", "/", "/b//", "/b/%2F", "/b/a%2fb/c", "/c_db/%E2%82%AC", "/d/%ff%FF"} {
		cases = append(cases, routeCase{path: p})
	}
	// Keys at and past the length bound.
	for _, k := range []string{
		strings.Repeat("k", wire.MaxKeyLen), strings.Repeat("k", wire.MaxKeyLen+1),
		strings.Repeat("%41", wire.MaxKeyLen), strings.Repeat("%41", wire.MaxKeyLen) + "B",
	} {
		cases = append(cases, routeCase{path: "/e-1/" + k})
	}
	// 100,000 keys that Envoy must place, and as many others as come.
	for placed := 0; placed < n; {
		c := randomCase(r, names)
		if c.want(byName) != "-" {
			placed++
		}
		cases = append(cases, c)
	}
	var in bytes.Buffer
	for _, c := range cases {
		pin := "-"
		if c.pinned != nil {
			pin = hex.EncodeToString([]byte(*c.pinned))
		}
		fmt.Fprintf(&in, "%s %s\n", hex.EncodeToString([]byte(c.path)), pin)
	}
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runLua(t, script, routeHarness, file)
	sc := bufio.NewScanner(strings.NewReader(out))
	placed, bad, lines := 0, 0, 0
	for i := 0; sc.Scan(); i++ {
		lines++
		if i >= len(cases) {
			t.Fatalf("luajit printed more lines than keys")
		}
		want := cases[i].want(byName)
		if got := sc.Text(); got != want {
			bad++
			if bad <= 10 {
				t.Errorf("path %q pinned %v: lua says %s, Go says %s", cases[i].path, cases[i].pinned, got, want)
			}
		}
		if want != "-" {
			placed++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d keys disagree", bad, len(cases))
	}
	if lines != len(cases) || placed < n {
		t.Fatalf("luajit answered %d of %d paths (%d placed, want %d)", lines, len(cases), placed, n)
	}
	t.Logf("%d paths agree, %d of them placed in a partition", len(cases), placed)
}

// TestEnvoyOnRequest drives envoy_on_request through a stub of Envoy's
// handle, as Envoy calls it.
func TestEnvoyOnRequest(t *testing.T) {
	script, err := Script(testDBs)
	if err != nil {
		t.Fatal(err)
	}
	const harness = `
local function run(path, pin, spoof)
  local h = { [":path"] = path, ["x-sequins-version"] = pin, ["x-spangle-partition"] = spoof,
    ["x-spangle-partition-version"] = spoof }
  local headers = {
    get = function(_, k) return h[k] end,
    remove = function(_, k) h[k] = nil end,
    add = function(_, k, v) assert(h[k] == nil, "add over a value"); h[k] = v end,
  }
  envoy_on_request({ headers = function(_) return headers end })
  io.write(h["x-spangle-partition"] or "-", " ", h["x-spangle-partition-version"] or "-", "\n")
end
run("/b/hello")
run("/b/hello", "v2", "3")
run("/b/hello", "v1")
run("/zz/hello", nil, "3")
run("/b/", nil, "1")
`
	key := []byte("hello")
	want := fmt.Sprintf("%d v2\n%d v2\n- -\n- -\n- -\n", partitioner.Partition(key, 7), partitioner.Partition(key, 7))
	if got := runLua(t, script, harness); got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
}

func TestScriptRejectsBadInput(t *testing.T) {
	for _, dbs := range [][]DB{
		{{Name: "a\"b", Version: "v", NumPartitions: 1}},
		{{Name: "a", Version: "v]]", NumPartitions: 1}},
		{{Name: "a", Version: "v", NumPartitions: 0}},
		{{Name: "a", Version: "v", NumPartitions: 1}, {Name: "a", Version: "w", NumPartitions: 2}},
	} {
		if _, err := Script(dbs); err == nil {
			t.Errorf("Script(%v) accepted bad input", dbs)
		}
	}
	if _, err := Script(nil); err != nil {
		t.Errorf("Script(nil): %v", err)
	}
}
