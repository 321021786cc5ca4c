package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// readyTracker watches every HttpBackend and remembers when each was first
// seen Ready: condition Ready=True at the object's current generation
// (status.observedGeneration == metadata.generation). Times are taken in
// the watch's event handler, so they do not depend on how often anyone
// looks.
type readyTracker struct {
	mu sync.Mutex
	// readyAt holds, per live backend, when it was first seen Ready; the
	// zero time while it is not.
	readyAt map[types.NamespacedName]time.Time
	// uids holds the UID of each live backend.
	uids map[types.NamespacedName]types.UID
	// cache is the tracker's informer cache, which watchViews adds
	// informers and handlers to.
	cache cache.Cache
}

// startReadyTracker starts an informer on HttpBackends with cfg and waits
// until it has synced. It stops with ctx.
func startReadyTracker(ctx context.Context, cfg *rest.Config) (*readyTracker, error) {
	t := &readyTracker{readyAt: map[types.NamespacedName]time.Time{}, uids: map[types.NamespacedName]types.UID{}}
	c, err := cache.New(cfg, cache.Options{Scheme: testenv.Scheme(), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, fmt.Errorf("creating the Ready tracker's cache: %w", err)
	}
	inf, err := c.GetInformer(ctx, &backendsv1alpha1.HttpBackend{})
	if err != nil {
		return nil, fmt.Errorf("creating the Ready tracker's informer: %w", err)
	}
	t.cache = c
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj) },
		UpdateFunc: func(_, obj any) { t.observe(obj) },
		DeleteFunc: t.forget,
	}); err != nil {
		return nil, fmt.Errorf("watching HttpBackends: %w", err)
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			log.Printf("Ready tracker stopped: %v", err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the Ready tracker's cache did not sync: %w", ctx.Err())
	}
	return t, nil
}

// isReady reports whether b is Ready at its current generation.
func isReady(b *backendsv1alpha1.HttpBackend) bool {
	return b.Status.ObservedGeneration == b.Generation &&
		meta.IsStatusConditionTrue(b.Status.Conditions, backendsv1alpha1.ReadyCondition)
}

// observe records an added or updated backend.
func (t *readyTracker) observe(obj any) {
	b, ok := obj.(*backendsv1alpha1.HttpBackend)
	if !ok {
		return
	}
	now := time.Now()
	key := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.uids[key] != b.UID { // new, or deleted and created again
		t.uids[key] = b.UID
		t.readyAt[key] = time.Time{}
	}
	if isReady(b) && t.readyAt[key].IsZero() {
		t.readyAt[key] = now
	}
}

// forget drops a deleted backend.
func (t *readyTracker) forget(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	key := types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.readyAt, key)
	delete(t.uids, key)
}

// count returns the number of live backends.
func (t *readyTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.uids)
}

// present returns how many of keys are live backends.
func (t *readyTracker) present(keys []types.NamespacedName) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, k := range keys {
		if _, ok := t.uids[k]; ok {
			n++
		}
	}
	return n
}

// readyCount returns how many of keys are Ready, and the latest time one
// of them became Ready.
func (t *readyTracker) readyCount(keys []types.NamespacedName) (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var (
		n    int
		last time.Time
	)
	for _, k := range keys {
		if at := t.readyAt[k]; !at.IsZero() {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, last
}

// waitReady waits until every one of keys is Ready and returns when the
// last became Ready. It logs progress every 10 seconds under label, and
// gives up after timeout.
func (t *readyTracker) waitReady(ctx context.Context, label string, keys []types.NamespacedName, timeout time.Duration) (time.Time, error) {
	return t.waitReadyAtLeast(ctx, label, keys, len(keys), timeout)
}

// waitReadyAtLeast waits until at least want of keys are Ready, and
// returns when the last of them became Ready.
func (t *readyTracker) waitReadyAtLeast(ctx context.Context, label string, keys []types.NamespacedName, want int, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	nextLog := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		n, last := t.readyCount(keys)
		if n >= want {
			return last, nil
		}
		now := time.Now()
		if now.After(deadline) {
			return time.Time{}, fmt.Errorf("%s: %d of %d backends Ready after %s", label, n, len(keys), timeout)
		}
		if now.After(nextLog) {
			log.Printf("%s: %d/%d Ready", label, n, len(keys))
			nextLog = now.Add(10 * time.Second)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// readyTime returns when key was first seen Ready, or the zero time.
func (t *readyTracker) readyTime(key types.NamespacedName) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.readyAt[key]
}
