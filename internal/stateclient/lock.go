package stateclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/infrastate/backend-operator/internal/lockinfo"
)

// maxLockBodyBytes bounds the lock holder body read from a conflict answer.
const maxLockBodyBytes = 1 << 20

// LockInfo is a type alias of lockinfo.Info, Terraform's description of a
// state lock holder, under the name this package's users know it by. Its
// JSON has the seven keys ID, Operation, Info, Who, Version, Created and
// Path, always present; Created is RFC 3339 with nanoseconds.
//
// A LockInfo the client returns from an answer (LockError.Info) is the
// server's text, with one change: the client's own secrets (the password,
// the "user:password" pair, its base64 basic auth value, the addresses'
// query values) are replaced by "[redacted]" in every field, so that a
// server echoing the credentials it received cannot make the client hand
// them on. A field that held a secret, the ID included, no longer matches
// what the server stored.
type LockInfo = lockinfo.Info

// NewLockInfo returns a LockInfo with a new UUID and the current UTC time
// (see lockinfo.New).
func NewLockInfo(operation, who string) LockInfo {
	return lockinfo.New(operation, who)
}

// LockError reports a lock held by someone else: a 409 or 423 answer, or an
// Unlock for an ID other than the one this client holds (StatusCode 0).
// Its Info and its text never hold the client's own secrets (see
// LockInfo), and its text never quotes an unreadable answer.
type LockError struct {
	// StatusCode is the answer's status, 0 when no request was sent.
	StatusCode int
	// Info is the holder, secrets redacted; nil when the answer carried no
	// readable LockInfo.
	Info *LockInfo
	// Err is the detail: why the holder is unknown, or what was refused.
	Err error
	// holderJSON is the answer's body as the server sent it, when it was a
	// LockInfo and held none of the client's secrets.
	holderJSON []byte
}

// HolderJSON returns the conflict answer's body exactly as the server sent
// it, when it was a LockInfo JSON object holding none of the client's
// secrets; nil otherwise. A server that releases a lock only on a
// byte-identical copy of the LockInfo that took it needs this body back
// (see UnlockWithBody). It is the server's text: never log it or show it;
// Info is what may be shown.
func (e *LockError) HolderJSON() []byte { return bytes.Clone(e.holderJSON) }

// Error implements error. It names the holder's ID when known.
func (e *LockError) Error() string {
	var b strings.Builder
	b.WriteString("state lock conflict")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	switch {
	case e.Info != nil && e.Info.ID != "":
		b.WriteString(": held by " + e.Info.String())
	case e.Info != nil:
		b.WriteString(": held by a lock without ID")
	default:
		b.WriteString(": holder unknown")
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Err.
func (e *LockError) Unwrap() error { return e.Err }

// Lock acquires the lock with Config.LockMethod, sending info as the body,
// and returns info.ID. The client then holds the lock: Update adds its ID
// and Unlock sends the same body. With no Config.LockAddress locking is
// disabled, as in Terraform: Lock returns "" and no error.
//
// 409 and 423 give a *LockError with the holder parsed from the body (Info
// nil when the body is empty or unreadable); 401 and 403 a *StatusError
// matching ErrUnauthorized or ErrForbidden; any other answer but 200 a
// *StatusError. A failed Lock leaves a lock held before untouched.
func (c *Client) Lock(ctx context.Context, info LockInfo) (string, error) {
	id, err := c.acquire(ctx, info)
	return id, c.secrets.scrubError(err)
}

func (c *Client) acquire(ctx context.Context, info LockInfo) (string, error) {
	if c.lock == nil {
		return "", nil
	}
	if info.ID == "" {
		return "", errors.New("lock: the LockInfo has no ID; use NewLockInfo")
	}
	body, err := info.Encode()
	if err != nil {
		return "", fmt.Errorf("lock: %w", err)
	}
	resp, err := c.do(ctx, c.cfg.LockMethod, c.lock, body)
	if err != nil {
		return "", err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		discard(resp)
		c.hold(info.ID, body)
		return info.ID, nil
	case http.StatusConflict, http.StatusLocked:
		return "", c.lockConflict(resp)
	}
	return "", statusError(resp)
}

// Resume records info as the lock this client holds, as a successful Lock
// of info would: Unlock and Update then send what Terraform's client sends
// for it. A process that took a lock before it restarted, or another
// client of the same process, resumes it to release it with the body it
// was taken with, which some servers require. It fails when info has no
// ID.
func (c *Client) Resume(info LockInfo) error {
	if info.ID == "" {
		return errors.New("resume: the LockInfo has no ID")
	}
	body, err := info.Encode()
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	c.hold(info.ID, body)
	return nil
}

// hold records lock id, taken with body, as the lock this client holds.
func (c *Client) hold(id string, body []byte) {
	c.mu.Lock()
	c.heldID, c.heldLockInfoJSON = id, body
	c.mu.Unlock()
}

// Unlock releases lock id with Config.UnlockMethod. When this client holds
// id it sends the LockInfo sent by Lock; when it holds no lock it sends
// {"ID": id} with the other fields zero, as OpenTofu does; when it holds
// another lock it sends nothing and returns a *LockError. With no
// Config.UnlockAddress it does nothing, as in Terraform.
//
// Only 200 succeeds. 409 and 423 give a *LockError with the holder, 401
// and 403 a *StatusError matching ErrUnauthorized or ErrForbidden.
func (c *Client) Unlock(ctx context.Context, id string) error {
	return c.secrets.scrubError(c.release(ctx, id))
}

func (c *Client) release(ctx context.Context, id string) error {
	if c.unlock == nil {
		return nil
	}
	if id == "" {
		return errors.New("unlock: empty lock ID")
	}
	c.mu.Lock()
	held, body := c.heldID, c.heldLockInfoJSON
	c.mu.Unlock()
	switch held {
	case id:
	case "":
		body = forceUnlockBody(id)
	default:
		var holder *LockInfo
		if info, err := lockinfo.Decode(body); err == nil {
			holder = &info
		}
		return &LockError{Info: holder, Err: fmt.Errorf("lock ID %q does not match the lock this client holds", id)}
	}
	return c.sendUnlock(ctx, id, body)
}

// ForceUnlock releases lock id without having acquired it: the body is
// {"ID": id} with the other fields zero, as OpenTofu's force-unlock sends.
// It fails with ErrUnlockDisabled when no Config.UnlockAddress is set.
// Answers are handled as by Unlock.
func (c *Client) ForceUnlock(ctx context.Context, id string) error {
	if c.unlock == nil {
		return ErrUnlockDisabled
	}
	if id == "" {
		return errors.New("force unlock: empty lock ID")
	}
	return c.secrets.scrubError(c.sendUnlock(ctx, id, forceUnlockBody(id)))
}

// ForceUnlockEmptyBody sends the UNLOCK that `terraform force-unlock`
// sends from a new process: an empty body, with the Content-Type and the
// Content-MD5 (of no bytes) Terraform sends with it. The server cannot
// tell which lock it is asked to release, and releases whatever lock it
// holds, so call it only right after reading that the holder is the lock
// to release, and only when the server refused ForceUnlock's body. It
// fails with ErrUnlockDisabled when no Config.UnlockAddress is set.
// Answers are handled as by Unlock.
func (c *Client) ForceUnlockEmptyBody(ctx context.Context) error {
	if c.unlock == nil {
		return ErrUnlockDisabled
	}
	return c.secrets.scrubError(c.sendUnlock(ctx, "", []byte{}))
}

func (c *Client) sendUnlock(ctx context.Context, id string, body []byte) error {
	resp, err := c.do(ctx, c.cfg.UnlockMethod, c.unlock, body)
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		discard(resp)
		c.mu.Lock()
		// An empty body released whatever lock was held; a body naming id
		// released id.
		if len(body) == 0 || (id != "" && c.heldID == id) {
			c.heldID, c.heldLockInfoJSON = "", nil
		}
		c.mu.Unlock()
		return nil
	case http.StatusConflict, http.StatusLocked:
		return c.lockConflict(resp)
	}
	return statusError(resp)
}

// heldLockID returns the ID of the lock this client holds, or "".
func (c *Client) heldLockID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heldID
}

// forceUnlockBody is a LockInfo with only the ID set.
func forceUnlockBody(id string) []byte {
	body, _ := json.Marshal(LockInfo{ID: id}) //nolint:errchkjson // cannot fail: strings and a zero time
	return body
}

// lockConflict reads the holder's LockInfo from a 409 or 423 answer,
// removes the client's secrets from it, and releases the answer.
func (c *Client) lockConflict(resp *http.Response) error {
	defer resp.Body.Close()
	e := &LockError{StatusCode: resp.StatusCode}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLockBodyBytes))
	switch {
	case err != nil:
		e.Err = fmt.Errorf("reading the lock holder: %w", c.secrets.cleanCause(err))
	case len(bytes.TrimSpace(body)) == 0:
		e.Err = errors.New("the answer names no lock holder")
	default:
		holder, err := lockinfo.Decode(body)
		if err != nil {
			e.Err = fmt.Errorf("the lock holder is not valid LockInfo JSON (%w)", err)
			break
		}
		c.secrets.scrubLockInfo(&holder)
		e.Info = &holder
		if text := string(body); c.secrets.scrub(text) == text {
			e.holderJSON = body
		}
	}
	return e
}
