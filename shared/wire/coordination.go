package wire

import "time"

// CoordinationStatus is the coordination part of a storaged's status
// page: who leads, on which ring version, and which assignments are
// still being fetched.
type CoordinationStatus struct {
	// Leader is the leading node's address, "" if none is known.
	Leader      string `json:"leader"`
	LeaderToken string `json:"leader_token,omitempty"`
	// Leading is true on the leader itself.
	Leading bool `json:"leading"`
	// RingVersion is the node list's version as last read, and Nodes its
	// length.
	RingVersion int64 `json:"ring_version"`
	Nodes       int   `json:"nodes"`
	// Epoch counts the decisions that landed; LastDecision is when the
	// last one did, by DecidedBy.
	Epoch        int64     `json:"epoch"`
	LastDecision time.Time `json:"last_decision,omitzero"`
	DecidedBy    string    `json:"decided_by,omitempty"`
	// InProgress lists assignments whose copies are not all published.
	InProgress []AssignmentProgress `json:"in_progress,omitempty"`
	// Strategy, Quorum and RereplicateAfter are the leader settings this
	// node runs with.
	Strategy         string `json:"strategy"`
	Quorum           string `json:"quorum"`
	RereplicateAfter string `json:"rereplicate_after"`
	// PinErrors (on the leader) says, per db, why its _PIN marker is not
	// published: malformed, unreadable, or naming a version the source
	// does not hold. The pins in force are in the cluster map's pins.
	PinErrors map[string]string `json:"pin_errors,omitempty"`
	// RoundError (on the leader) says why its rounds decide nothing, and
	// RoundErrorSince since when; "" while they succeed.
	RoundError      string    `json:"round_error,omitempty"`
	RoundErrorSince time.Time `json:"round_error_since,omitzero"`
}

// AssignmentProgress is one assignment in progress.
type AssignmentProgress struct {
	DB      string `json:"db"`
	Version string `json:"version"`
	// Pending is the copies assigned but not yet published.
	Pending int `json:"pending"`
}
