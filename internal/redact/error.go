// Package redact rewrites the text of errors without losing what they are:
// the clients of this module remove secrets, and bytes that a server sent,
// from the messages of errors they return, while callers still classify
// those errors with errors.Is and errors.As.
package redact

import "errors"

// Error returns an error whose message is text and that is otherwise err:
// errors.Is and errors.As see err's chain. When the chain holds a net.Error
// (an error with Timeout and Temporary, which url.Error asks of its cause
// directly), the result is one too, answering as it does; otherwise it is
// not, so that a rewritten error is never mistaken for a network failure.
func Error(err error, text string) error {
	var ne interface {
		Timeout() bool
		Temporary() bool
	}
	if errors.As(err, &ne) {
		return &rewrittenNetError{rewrittenError{err: err, text: text}, ne}
	}
	return &rewrittenError{err: err, text: text}
}

// rewrittenError is an error with another message.
type rewrittenError struct {
	err  error
	text string
}

func (e *rewrittenError) Error() string { return e.text }
func (e *rewrittenError) Unwrap() error { return e.err }

// rewrittenNetError is a rewrittenError of a network error.
type rewrittenNetError struct {
	rewrittenError
	net interface {
		Timeout() bool
		Temporary() bool
	}
}

// Timeout reports whether the original error is a timeout.
func (e *rewrittenNetError) Timeout() bool { return e.net.Timeout() }

// Temporary reports whether the original error is temporary.
func (e *rewrittenNetError) Temporary() bool { return e.net.Temporary() }

// Rewrite returns err when clean leaves its message as it is, and
// otherwise an error with the cleaned message that is still err (see
// Error). A nil err stays nil.
func Rewrite(err error, clean func(string) string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if cleaned := clean(text); cleaned != text {
		return Error(err, cleaned)
	}
	return err
}
