package cos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// ErrLockNotHeld means a lock to release is not the one the .tflock
// object holds (another ID), or there is no lock at all.
var ErrLockNotHeld = errors.New("the lock is not held")

// ReleaseLock releases the lock of workspace whose ID (the MD5 of the
// .tflock object, as Terraform's cos backend reports it) is id, as
// `terraform force-unlock` does: it reads the lock object, checks its ID,
// and deletes it. A lock with another ID, or none, is left alone and
// reported as ErrLockNotHeld. Terraform guards the same read and delete
// with a tag mutex held through the Tencent Cloud tag service, which this
// client does not call: a run that takes the lock in the instant between
// the check and the delete would lose it. Its errors are redacted.
func (c *Client) ReleaseLock(ctx context.Context, workspace, id string) error {
	holder, err := c.ReadLock(ctx, workspace)
	switch {
	case err != nil:
		return err
	case holder == nil:
		return fmt.Errorf("release lock %s: %w: no lock is held", id, ErrLockNotHeld)
	case holder.ID != id:
		return fmt.Errorf("release lock %s: %w: the lock held is %s", id, ErrLockNotHeld, holder.ID)
	}
	key, err := c.stateKey(workspace)
	if err != nil {
		return err
	}
	key = LockKey(key)
	resp, err := c.sdk.Object.Delete(ctx, key)
	if err != nil {
		return c.redact.error(c.classify("delete lock object "+strconv.Quote(key), key, resp, err))
	}
	return nil
}
