package conditions

import (
	"errors"
	"fmt"
	"strings"
)

// StallError is a problem only the user can fix: a missing Secret, a PEM
// that does not parse, a name that collides. The reconciler records it as
// Stalled=True with its reason and does not requeue; the watches on the
// referenced objects bring the object back when something changes.
//
// Messages name objects and keys, never values.
type StallError struct {
	Reason  string
	Message string
}

// Error returns the message.
func (e *StallError) Error() string { return e.Message }

// Stall returns a StallError with a formatted message.
func Stall(reason, format string, args ...any) error {
	return &StallError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// AsStall returns the StallError in err's chain, if any.
func AsStall(err error) (*StallError, bool) {
	return errors.AsType[*StallError](err)
}

// JoinStalls is the outcome of checks that each may fail, such as the
// references of one backend, read one after the other: nil when none
// failed; the first error that is no stall when there is one (a failed
// read of the API server is retried with backoff, and the retry reports
// every problem); otherwise one stall that lists every problem, so that
// the user fixes them all in one round. Its reason is the first problem's,
// its message the problems' messages in order, one sentence each.
func JoinStalls(errs ...error) error {
	var stalls []*StallError
	for _, err := range errs {
		if err == nil {
			continue
		}
		se, ok := AsStall(err)
		if !ok {
			return err
		}
		stalls = append(stalls, se)
	}
	switch len(stalls) {
	case 0:
		return nil
	case 1:
		return stalls[0]
	}
	messages := make([]string, 0, len(stalls))
	for _, se := range stalls {
		messages = append(messages, strings.TrimSuffix(se.Message, "."))
	}
	return &StallError{Reason: stalls[0].Reason, Message: strings.Join(messages, ". ")}
}
