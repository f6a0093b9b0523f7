package zktopo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-zookeeper/zk"
)

// AuthEnv is the environment variable that may hold the ZooKeeper digest
// credential, user:password. When set and not empty it wins over
// [zk] auth_file, as the environment overrides a configuration file
// baked into an image.
const AuthEnv = "SPANGLE_ZK_AUTH"

// maxAuthBytes bounds an auth file: a credential is one short line.
const maxAuthBytes = 4 << 10

// Credential is a ZooKeeper digest identity, user:password. Every way
// of printing a Credential (String, GoString, any verb on a struct
// holding one, even in an unexported field, JSON, text) shows only the
// user, so that a config or Options dump never reveals the password: it
// is held by a closure, which fmt prints as an address. The zero value
// is no credential. A Credential is immutable.
type Credential struct {
	user     string
	password func() string
}

// ErrBadCredential says a credential is not user:password.
var ErrBadCredential = errors.New("zktopo: the ZooKeeper credential is not user:password (a non-empty user without ':' and a non-empty password)")

// ParseCredential reads user:password, trailing blanks and newlines
// ignored. The error never repeats s.
func ParseCredential(s string) (Credential, error) {
	s = strings.TrimRight(s, " \t\r\n")
	user, password, ok := strings.Cut(s, ":")
	if !ok || user == "" || password == "" || strings.ContainsAny(s, "\r\n") ||
		strings.TrimSpace(user) != user {
		return Credential{}, ErrBadCredential
	}
	return Credential{user: user, password: func() string { return password }}, nil
}

// LoadCredential returns the credential of AuthEnv (read with getenv)
// if it is set and not empty, else that of file if file is not empty,
// else no credential. source names where it came from ("environment
// SPANGLE_ZK_AUTH", "auth_file /etc/...", or ""), for a log line; an
// error names the source, never the content.
func LoadCredential(file string, getenv func(string) string) (cred Credential, source string, err error) {
	if getenv != nil {
		if v := getenv(AuthEnv); v != "" {
			source = "environment " + AuthEnv
			cred, err = ParseCredential(v)
			if err != nil {
				return Credential{}, source, fmt.Errorf("zktopo: %s: %w", source, err)
			}
			return cred, source, nil
		}
	}
	if file == "" {
		return Credential{}, "", nil
	}
	source = "auth_file " + file
	f, err := os.Open(file)
	if err != nil {
		return Credential{}, source, fmt.Errorf("zktopo: reading the ZooKeeper credential: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAuthBytes+1))
	if err != nil {
		return Credential{}, source, fmt.Errorf("zktopo: reading the ZooKeeper credential %s: %w", file, err)
	}
	if len(b) > maxAuthBytes {
		return Credential{}, source, fmt.Errorf("zktopo: %s: larger than %d bytes: %w", source, maxAuthBytes, ErrBadCredential)
	}
	cred, err = ParseCredential(string(b))
	if err != nil {
		return Credential{}, source, fmt.Errorf("zktopo: %s: %w", source, err)
	}
	return cred, source, nil
}

// IsZero reports whether c is no credential.
func (c Credential) IsZero() bool { return c.password == nil }

// User is the identity's name (not a secret: it is in every ACL).
func (c Credential) User() string { return c.user }

// String shows the user only.
func (c Credential) String() string {
	if c.IsZero() {
		return "(none)"
	}
	return c.user + ":(redacted)"
}

// GoString shows the user only.
func (c Credential) GoString() string { return "zktopo.Credential(" + c.String() + ")" }

// MarshalText shows the user only, so JSON, TOML and YAML dumps do too.
func (c Credential) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// authBytes is what AddAuth sends.
func (c Credential) authBytes() []byte { return []byte(c.user + ":" + c.password()) }

// digestACL is the ACL entry of the identity with perms.
func (c Credential) digestACL(perms int32) zk.ACL {
	return zk.DigestACL(perms, c.user, c.password())[0]
}
