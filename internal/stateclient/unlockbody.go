package stateclient

import (
	"context"
	"net/http"

	"github.com/infrastate/backend-operator/internal/lockinfo"
)

// UnlockWithBody sends an UNLOCK with Config.UnlockMethod whose body is
// body, byte for byte, with Content-Type and Content-MD5 as every body
// gets. It is for servers that release a lock only on a byte-identical
// copy of the LockInfo that took it: send back the LockInfo a lock was
// taken with (when the client that took it is gone, or to learn which
// bodies a server accepts), or the holder's LockInfo as a conflict answer
// carried it (LockError.HolderJSON). An empty body is the UNLOCK of
// ForceUnlockEmptyBody. When body names the lock this client holds, a 200
// forgets it. It fails with ErrUnlockDisabled when no
// Config.UnlockAddress is set. Answers are handled as by Unlock.
func (c *Client) UnlockWithBody(ctx context.Context, body []byte) error {
	if c.unlock == nil {
		return ErrUnlockDisabled
	}
	if body == nil {
		body = []byte{}
	}
	id := ""
	if info, err := lockinfo.Decode(body); err == nil {
		id = info.ID
	}
	return c.secrets.scrubError(c.sendUnlock(ctx, id, body))
}

// FetchStatus sends the GET of the state and returns the answer's status
// without reading the state. Terraform reads 204 and 404 alike (no state),
// but a server that answers 404 for a name it does not know and 204 for a
// state that exists but was never written tells here that a LOCK or an
// UNLOCK created the state, as GitLab's does. 401 and 403 give a
// *StatusError matching ErrUnauthorized or ErrForbidden; other statuses
// are returned without error, unless retries ran out on them.
func (c *Client) FetchStatus(ctx context.Context) (int, error) {
	resp, err := c.do(ctx, http.MethodGet, &c.state, nil)
	if err != nil {
		return 0, c.secrets.scrubError(err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return 0, statusError(resp)
	}
	discard(resp)
	return resp.StatusCode, nil
}

// LocksConfigured reports whether both a lock and an unlock address are
// set: whether Lock takes locks that Unlock can release. A caller that
// must never leave a lock behind checks it before taking one.
func (c *Client) LocksConfigured() bool {
	return c.lock != nil && c.unlock != nil
}
