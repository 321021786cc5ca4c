package stateclient

import (
	"context"
	"net/http"
)

// Update writes the state with Config.UpdateMethod. While this client
// holds a lock it adds the query parameter ID=<lock id>, keeping any query
// the address already has. The body carries Content-Type application/json
// and Content-MD5, computed once whatever the number of attempts, and data
// is sent without being copied.
//
// 200, 201 and 204 succeed. A 409 or 423 (a lock held by someone else)
// gives a *LockError with the holder when the server names it; 401 and 403
// a *StatusError matching ErrUnauthorized or ErrForbidden; any other answer
// a *StatusError.
func (c *Client) Update(ctx context.Context, data []byte) error {
	return c.secrets.scrubError(c.update(ctx, data))
}

func (c *Client) update(ctx context.Context, data []byte) error {
	if data == nil {
		data = []byte{} // always a body, as Terraform sends
	}
	return c.write(ctx, "", bytesPayload(data))
}

// write sends body with Config.UpdateMethod to the state address, with
// the query parameter ID=lockID, or ID=<the lock this client holds> when
// lockID is "" (no ID when it holds none), and reads the answer as Update
// documents.
func (c *Client) write(ctx context.Context, lockID string, body *payload) error {
	u := *c.state.url
	if lockID == "" {
		lockID = c.heldLockID()
	}
	if lockID != "" {
		q := u.Query()
		q.Set("ID", lockID)
		u.RawQuery = q.Encode()
	}
	resp, err := c.send(ctx, c.cfg.UpdateMethod, &c.state, &u, body)
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated, http.StatusNoContent:
		discard(resp)
		return nil
	case http.StatusConflict, http.StatusLocked:
		return c.lockConflict(resp)
	}
	return statusError(resp)
}

// Purge deletes the state with DELETE. Only 200 succeeds, as in Terraform
// (a 204 is an error).
func (c *Client) Purge(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodDelete, &c.state, nil)
	if err != nil {
		return c.secrets.scrubError(err)
	}
	if resp.StatusCode == http.StatusOK {
		discard(resp)
		return nil
	}
	return statusError(resp)
}
