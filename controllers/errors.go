package controllers

import (
	"errors"
	"fmt"
)

// stallError is a problem only the user can fix: a missing Secret, a PEM
// that does not parse, a name that collides. The reconciler records it as
// Stalled=True with its reason and does not requeue; the watches on the
// referenced objects bring the object back when something changes.
//
// Messages name objects and keys, never values.
type stallError struct {
	reason  string
	message string
}

func (e *stallError) Error() string { return e.message }

// stall returns a stallError with a formatted message.
func stall(reason, format string, args ...any) error {
	return &stallError{reason: reason, message: fmt.Sprintf(format, args...)}
}

// asStall returns the stallError in err's chain, if any.
func asStall(err error) (*stallError, bool) {
	return errors.AsType[*stallError](err)
}
