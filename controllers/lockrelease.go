package controllers

import (
	"context"
)

// settleHeldLock decides, in the probe that read it, what becomes of a
// lock r saw held: it records what c (nil when lockPolicy does not
// release gone holders) sees of the holder's Pod, then releases the lock
// with release, naming the holder's ID just read, when forceUnlock names
// that ID or when c finds the holder's Pod gone for the grace period. The
// release is the kind's safe force unlock, which the server (or the
// kind's own check of the lock) refuses when another holds the lock by
// then. The operator's own lock check, and a holder whose ID cannot be
// read, are left alone; on a server that names no holder, only a lock
// forceUnlock names is released, when the server allows it (release
// decides).
func settleHeldLock(ctx context.Context, r *lockReading, forceUnlock string, c *holderCheck, release func(ctx context.Context, id string, gone bool) error) {
	if !r.held || r.ownErr != nil {
		return
	}
	if r.holder == nil {
		// A server whose conflicts name no holder: only forceUnlock can
		// name the lock, and release decides whether the server lets the
		// operator release only that one.
		if forceUnlock != "" {
			r.named = forceUnlock
			r.releaseErr = release(ctx, forceUnlock, false)
			r.released = r.releaseErr == nil
		}
		return
	}
	if r.holder.ID == "" {
		return
	}
	if c != nil {
		r.sighting = c.see(ctx, r.holder)
	}
	switch {
	case forceUnlock != "" && r.holder.ID == forceUnlock:
	case c != nil && r.sighting.state == holderPodSeen && releasable(r.sighting.pod, c.grace, c.clock.Now()):
		r.goneRelease = true
	default:
		return
	}
	r.named = r.holder.ID
	r.releaseErr = release(ctx, r.holder.ID, r.goneRelease)
	r.released = r.releaseErr == nil
}
