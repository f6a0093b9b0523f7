package zktopo_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spangle/shared/topo/zktopo"
)

const secretPW = "s3cr3t-Pa55word-XYZ"

func TestParseCredential(t *testing.T) {
	for _, s := range []string{"u:" + secretPW, "u:" + secretPW + "\n", "u:" + secretPW + " \r\n", "user.name:p:with:colons"} {
		c, err := zktopo.ParseCredential(s)
		if err != nil || c.IsZero() {
			t.Errorf("ParseCredential(%q) = %v, %v", s, c, err)
		}
	}
	for _, s := range []string{"", "u", "u:", ":p", " u:p", "u:p\nq", "u\n:p"} {
		_, err := zktopo.ParseCredential(s)
		if !errors.Is(err, zktopo.ErrBadCredential) {
			t.Errorf("ParseCredential(%q) = %v, want ErrBadCredential", s, err)
			continue
		}
		if len(s) > 2 && strings.Contains(err.Error(), s) {
			t.Errorf("the error of %q repeats it: %v", s, err)
		}
	}
}

// TestCredentialNeverPrinted: every way a config or Options dump may
// print a Credential shows the user, never the password.
func TestCredentialNeverPrinted(t *testing.T) {
	c, err := zktopo.ParseCredential("spangle:" + secretPW)
	if err != nil {
		t.Fatal(err)
	}
	opts := zktopo.Options{Servers: []string{"zk:2181"}, Cluster: "c", Auth: c}
	type holder struct {
		cred  zktopo.Credential // unexported: fmt cannot call its String
		Opts  zktopo.Options
		Ptr   *zktopo.Credential
		Creds []zktopo.Credential
	}
	h := holder{cred: c, Opts: opts, Ptr: &c, Creds: []zktopo.Credential{c}}
	var outs []string
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		outs = append(outs, fmt.Sprintf(f, c), fmt.Sprintf(f, opts), fmt.Sprintf(f, h), fmt.Sprintf(f, &h))
	}
	js, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(js))
	for _, o := range outs {
		if strings.Contains(o, secretPW) {
			t.Fatalf("the password is printed: %s", o)
		}
	}
	if !strings.Contains(fmt.Sprint(c), "spangle") {
		t.Errorf("the user is not shown: %v", c)
	}
}

func TestLoadCredential(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "zk-auth")
	if err := os.WriteFile(file, []byte("fileuser:"+secretPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == zktopo.AuthEnv {
				return v
			}
			return ""
		}
	}
	// The environment wins over the file.
	c, src, err := zktopo.LoadCredential(file, env("envuser:"+secretPW))
	if err != nil || c.User() != "envuser" || !strings.Contains(src, zktopo.AuthEnv) {
		t.Errorf("env and file: %v from %q, %v", c, src, err)
	}
	c, src, err = zktopo.LoadCredential(file, env(""))
	if err != nil || c.User() != "fileuser" || !strings.Contains(src, file) {
		t.Errorf("file: %v from %q, %v", c, src, err)
	}
	c, src, err = zktopo.LoadCredential("", env(""))
	if err != nil || !c.IsZero() || src != "" {
		t.Errorf("none: %v from %q, %v", c, src, err)
	}
	// Errors name the source, never the content.
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte(secretPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte("u:"+strings.Repeat(secretPW, 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		env  string
	}{{bad, ""}, {big, ""}, {filepath.Join(dir, "missing"), ""}, {file, secretPW}} {
		_, _, err := zktopo.LoadCredential(tc.file, env(tc.env))
		if err == nil {
			t.Errorf("LoadCredential(%s, env %q) accepted", tc.file, tc.env)
			continue
		}
		if strings.Contains(err.Error(), secretPW) {
			t.Errorf("the error repeats the secret: %v", err)
		}
		if tc.env == "" && !strings.Contains(err.Error(), tc.file) {
			t.Errorf("the error does not name %s: %v", tc.file, err)
		}
	}
}
