// Package lockinfo is Terraform's description of a state lock holder, the
// LockInfo JSON every Terraform backend writes: the body of the http
// backend's LOCK and UNLOCK requests and of its conflict answers, and the
// content of the cos backend's .tflock object. The state clients of both
// backends (internal/stateclient and internal/cos) share it.
package lockinfo

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/infrastate/backend-operator/internal/redact"
)

// Info describes a state lock, as Terraform writes it. Its JSON has the
// seven keys ID, Operation, Info, Who, Version, Created and Path, always
// present; Created is RFC 3339 with nanoseconds.
type Info struct {
	// ID is the lock ID, a UUID.
	ID string `json:"ID"`
	// Operation is the Terraform operation, e.g. "OperationTypeApply".
	Operation string `json:"Operation"`
	// Info is free text.
	Info string `json:"Info"`
	// Who is the holder, conventionally user@host.
	Who string `json:"Who"`
	// Version is the holder's Terraform version.
	Version string `json:"Version"`
	// Created is when the lock was taken.
	Created time.Time `json:"Created"`
	// Path is the state path; empty for the http backend.
	Path string `json:"Path"`
}

// New returns an Info with a new UUID and the current UTC time.
func New(operation, who string) Info {
	return Info{ID: uuid.NewString(), Operation: operation, Who: who, Created: time.Now().UTC()}
}

// Decode reads an Info from its JSON. Its error says where data stops being
// an Info by byte offset only, never quoting data (see redact.JSONError):
// the data is a server's answer, which may echo anything.
func Decode(data []byte) (Info, error) {
	var l Info
	if err := json.Unmarshal(data, &l); err != nil {
		return Info{}, redact.JSONError(err)
	}
	return l, nil
}

// Encode returns l's JSON, the body a client writes to take the lock.
func (l Info) Encode() ([]byte, error) {
	body, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("encoding the LockInfo: %w", err)
	}
	return body, nil
}

// Rewrite replaces every text field of l (all but Created) by f of it.
// The state clients scrub the holders servers send with it.
func (l *Info) Rewrite(f func(string) string) {
	for _, field := range []*string{&l.ID, &l.Operation, &l.Info, &l.Who, &l.Version, &l.Path} {
		*field = f(*field)
	}
}

// String describes the lock on one line.
func (l Info) String() string {
	parts := []string{"ID=" + l.ID}
	for _, f := range []struct{ k, v string }{{"operation", l.Operation}, {"who", l.Who}, {"version", l.Version}, {"info", l.Info}, {"path", l.Path}} {
		if f.v != "" {
			parts = append(parts, f.k+"="+f.v)
		}
	}
	if !l.Created.IsZero() {
		parts = append(parts, "created="+l.Created.Format(time.RFC3339))
	}
	return strings.Join(parts, ", ")
}
