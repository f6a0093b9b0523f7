package zktopo_test

import (
	"strings"
	"testing"

	"spangle/shared/topo/zktopo"
)

func TestSettingsValidateNamesEveryBadKey(t *testing.T) {
	if err := zktopo.DefaultSettings().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	s := zktopo.Settings{Servers: []string{"zk1:2181", "zk2"}, Prefix: "a/b", ACLRead: "everyone"}
	err := s.Validate()
	if err == nil {
		t.Fatal("bad settings accepted")
	}
	for _, want := range []string{`zk.servers: "zk2" is not host:port`, "zk.connect_timeout: must be positive",
		"zk.session_timeout: must be positive", "zk.prefix:", `zk.acl_read: "everyone" is not world or auth`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "zk1") {
		t.Errorf("a good server named: %v", err)
	}
}
