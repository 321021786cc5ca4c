package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/render"
)

// killBurstScenario: -kill-n backends are created, the manager is
// SIGKILLed when about half are Ready and started again; then every
// backend must control exactly one ConfigMap and one Secret, and no
// rendered object may be left without a live owner.
func (h *harness) killBurstScenario(ctx context.Context) error {
	m, b, start, err := h.managedBatch(ctx, prefixKill, h.opts.killN)
	if err != nil {
		return err
	}
	first := time.Now()
	created := make(chan error, 1)
	go func() {
		_, err := createBackends(ctx, h.client, h.opts.workers, b.backends, h.state.url, nil)
		created <- err
	}()
	half := (len(b.backends) + 1) / 2
	if _, err := h.tracker.waitReadyAtLeast(ctx, scenarioKillBurst, b.backends, half, h.opts.waitTimeout(len(b.backends))); err != nil {
		return err
	}
	killedCPU, err := readCPU(m.pid())
	if err != nil {
		return err
	}
	readyAtKill, _ := h.tracker.readyCount(b.backends)
	if _, err := h.stopManager(syscall.SIGKILL); err != nil {
		return err
	}
	log.Printf("kill-burst: SIGKILL with %d/%d Ready", readyAtKill, len(b.backends))
	m2, err := h.startManager(ctx)
	if err != nil {
		return err
	}
	if err := <-created; err != nil {
		return err
	}
	last, err := h.tracker.waitReady(ctx, scenarioKillBurst, b.backends, h.opts.waitTimeout(len(b.backends)))
	if err != nil {
		return err
	}
	after, err := h.snap(ctx)
	if err != nil {
		return err
	}
	usage, err := m2.usage(0)
	if err != nil {
		return err
	}
	usage.cpu += killedCPU - start.cpu
	report, err := h.checkOwnership(ctx)
	if err != nil {
		return err
	}
	if !report.ok() {
		h.failed = true
	}
	requests, probes := since(start.before, after)
	h.results = append(h.results, result{
		scenario: scenarioKillBurst, backends: len(b.backends), elapsed: last.Sub(first),
		requests: requests, probes: probes[prefixKill], allProbes: probes.total(), usage: usage,
		notes: append([]string{
			fmt.Sprintf("SIGKILL at %d/%d Ready; CPU of both processes, RSS of the second", readyAtKill, len(b.backends)),
			report.String(),
		}, h.probeFailures()...),
	})
	return nil
}

// checkOwnership lists every HttpBackend and every ConfigMap and Secret
// labelled as the operator's, and checks them with checkOwnership.
func (h *harness) checkOwnership(ctx context.Context) (ownershipReport, error) {
	var backends backendsv1alpha1.HttpBackendList
	if err := h.client.List(ctx, &backends); err != nil {
		return ownershipReport{}, fmt.Errorf("listing HttpBackends: %w", err)
	}
	live := make([]liveBackend, 0, len(backends.Items))
	for i := range backends.Items {
		bk := &backends.Items[i]
		live = append(live, liveBackend{NamespacedName: types.NamespacedName{Namespace: bk.Namespace, Name: bk.Name}, UID: bk.UID})
	}
	labelled := client.MatchingLabels{render.ManagedByLabel: render.ManagedByValue}
	var (
		configMaps corev1.ConfigMapList
		secrets    corev1.SecretList
		objects    []renderedObject
	)
	if err := h.client.List(ctx, &configMaps, labelled); err != nil {
		return ownershipReport{}, fmt.Errorf("listing ConfigMaps: %w", err)
	}
	if err := h.client.List(ctx, &secrets, labelled); err != nil {
		return ownershipReport{}, fmt.Errorf("listing Secrets: %w", err)
	}
	add := func(kind string, meta *metav1.ObjectMeta) {
		o := renderedObject{Kind: kind, NamespacedName: types.NamespacedName{Namespace: meta.Namespace, Name: meta.Name}}
		if ref := metav1.GetControllerOfNoCopy(meta); ref != nil {
			o.ControllerUID = ref.UID
		}
		objects = append(objects, o)
	}
	for i := range configMaps.Items {
		add("ConfigMap", &configMaps.Items[i].ObjectMeta)
	}
	for i := range secrets.Items {
		add("Secret", &secrets.Items[i].ObjectMeta)
	}
	return checkOwnership(live, objects), nil
}

// applyLatencyScenario: with everything present, backends are created one
// at a time, each timed from its create returning to Ready.
func (h *harness) applyLatencyScenario(ctx context.Context) error {
	if err := h.ensureBackends(ctx); err != nil {
		return err
	}
	m := h.manager
	b, err := h.newBatch(ctx, prefixLatency, h.opts.latencySamples)
	if err != nil {
		return err
	}
	start, err := h.startMeasuring(ctx, m)
	if err != nil {
		return err
	}
	samples := make([]time.Duration, 0, len(b.backends))
	for _, key := range b.backends {
		if err := h.client.Create(ctx, newPasswordSecret(key)); err != nil {
			return fmt.Errorf("creating the password Secret of %s: %w", key, err)
		}
		if err := h.client.Create(ctx, newBackend(key, h.state.url)); err != nil {
			return fmt.Errorf("creating HttpBackend %s: %w", key, err)
		}
		created := time.Now()
		ready, err := h.waitOneReady(ctx, key, 2*time.Minute)
		if err != nil {
			return err
		}
		samples = append(samples, max(ready.Sub(created), 0))
	}
	requests, probes, usage, err := h.endMeasuring(ctx, m, start)
	if err != nil {
		return err
	}
	h.results = append(h.results, result{
		scenario: scenarioApplyLatency, backends: len(b.backends),
		timeText: fmt.Sprintf("p50 %s, p95 %s", formatMillis(percentile(samples, 50)), formatMillis(percentile(samples, 95))),
		requests: requests, probes: probes[prefixLatency], allProbes: probes.total(), usage: usage,
		notes: append([]string{fmt.Sprintf("one at a time, %d backends present; min %s, max %s",
			h.tracker.count(), formatMillis(slices.Min(samples)), formatMillis(slices.Max(samples)))}, h.probeFailures()...),
	})
	return nil
}

// waitOneReady waits until key is Ready and returns when it became so.
func (h *harness) waitOneReady(ctx context.Context, key types.NamespacedName, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		if at := h.tracker.readyTime(key); !at.IsZero() {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("HttpBackend %s not Ready within %s", key, timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}
