package proc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"spangle/shared/wire"
)

// ErrVersionFailed is returned when storaged puts the version waited for
// in ERROR.
var ErrVersionFailed = errors.New("proc: version failed to load")

// ActiveAt polls storaged's status of db until version is ACTIVE and
// returns when storaged made it so, by storaged's own clock (the
// version's "activated" time): what is timed is the server's work, not
// the poll's interval nor the CPU each poll takes from the load on a
// machine of two cores. ERROR fails the wait, as does timeout.
func (p *Process) ActiveAt(ctx context.Context, db, version string, timeout time.Duration) (time.Time, error) {
	var at time.Time
	_, err := p.WaitFor(ctx, p.Scheme()+"://"+p.Addr+"/"+db, 25*time.Millisecond, timeout,
		func(status int, body []byte) (bool, error) {
			var st wire.NodeStatus
			if status != 200 || json.Unmarshal(body, &st) != nil {
				return false, nil // not up yet, or the db not seen yet
			}
			v, ok := st.DBs[db].Versions[version]
			switch {
			case !ok:
				return false, nil
			case v.State == wire.StateError:
				return false, fmt.Errorf("%w: %s", ErrVersionFailed, v.Reason)
			case v.State != wire.StateActive || v.Activated.IsZero():
				return false, nil
			}
			at = v.Activated
			return true, nil
		})
	return at, err
}
