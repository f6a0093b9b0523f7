package config

import (
	"strings"
	"testing"
	"time"
)

func TestCoordinatorKeys(t *testing.T) {
	c := Default()
	if s := c.Sharding; s.Assignment != "sequins" || s.RereplicateAfter != 5*time.Minute || s.ElectQuorum != "all" ||
		s.PruneAfter != 5*time.Minute {
		t.Fatalf("defaults: %+v", s)
	}
	c.Source = "/data"
	err := Decode(`
[sharding]
assignment = "rendezvous"
rereplicate_after = "0s"
prune_after = "1h"
elect_quorum = "majority"
`, &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if s := c.Sharding; s.Assignment != "rendezvous" || s.RereplicateAfter != 0 || s.ElectQuorum != "majority" ||
		s.PruneAfter != time.Hour {
		t.Fatalf("decoded: %+v", s)
	}
	for key, toml := range map[string]string{
		"sharding.assignment":        `assignment = "consistent"`,
		"sharding.rereplicate_after": `rereplicate_after = "-1s"`,
		"sharding.prune_after":       `prune_after = "-1s"`,
		"sharding.elect_quorum":      `elect_quorum = "half"`,
	} {
		c := Default()
		c.Source = "/data"
		if err := Decode("[sharding]\n"+toml, &c); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: Validate = %v, want an error naming %s", toml, err, key)
		}
	}
}
