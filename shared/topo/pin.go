package topo

import (
	"fmt"
	"strings"
)

// Pins is the parent of the pin entries, one persistent pins/<db> per db
// ever pinned, holding Pin JSON.
func (p Paths) Pins() string { return p.Root() + "/pins" }

// Pin is pins/<db>.
func (p Paths) Pin(db string) string { return p.Pins() + "/" + db }

// CheckPin rejects a pin that cannot be stored: a bad db name, a
// version that is neither "" (unpinned) nor a valid name, or a
// generation above MaxPinGeneration.
func CheckPin(db string, p Pin) error {
	if !ValidName(db) {
		return fmt.Errorf("%w: db %q", ErrBadName, db)
	}
	if p.Version != "" && !ValidName(p.Version) {
		return fmt.Errorf("%w: pinned version %q of %s", ErrBadName, p.Version, db)
	}
	if p.Generation > MaxPinGeneration {
		return fmt.Errorf("%w: pin generation %d of %s above %d", ErrBadName, p.Generation, db, uint64(MaxPinGeneration))
	}
	return nil
}

// PinOf returns db's published pin; the zero Pin (unpinned, generation 0)
// when none was published.
func (m *Map) PinOf(db string) Pin { return m.Pins[db] }

// AddPin records a db's published pin.
func (b *Builder) AddPin(db string, p Pin) {
	b.init()
	if b.m.Pins == nil {
		b.m.Pins = map[string]Pin{}
	}
	b.m.Pins[db] = p
}

// AddPinError records why a node does not follow db's _PIN marker; the
// distinct reasons of several nodes are joined.
func (b *Builder) AddPinError(db, reason string) {
	b.init()
	if b.m.PinErrors == nil {
		b.m.PinErrors = map[string]string{}
	}
	switch cur := b.m.PinErrors[db]; {
	case cur == "":
		b.m.PinErrors[db] = reason
	case !strings.Contains(cur, reason):
		b.m.PinErrors[db] = cur + "; " + reason
	}
}
