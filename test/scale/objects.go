package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// Credentials of the harness's state server, which every backend uses.
const (
	stateUser     = "scale"
	statePassword = "scale-Passw0rd-one"
	// passwordKey is the key of the password in each password Secret.
	passwordKey = "password"
)

// Prefixes of the batches' namespaces; the state server's counts are
// kept by them.
const (
	prefixFloorBurst = "floor-b"
	prefixBurst      = "burst"
	prefixFloorCold  = "floor-c"
	prefixCold       = "cold"
	prefixKill       = "kill"
	prefixLatency    = "latency"
)

// batch is a set of backends created together, spread over namespaces
// of their own.
type batch struct {
	// namespaces holds the batch's namespaces, in order.
	namespaces []string
	// backends holds the batch's backends, in creation order.
	backends []types.NamespacedName
}

// planBatch names n backends "hb-00000", "hb-00001", ... spread over
// namespaces "<prefix>-0000", "<prefix>-0001", ... of perNamespace
// backends each. Names are unique across the run as long as prefixes are.
func planBatch(prefix string, n, perNamespace int) batch {
	var b batch
	for i := range n {
		if i%perNamespace == 0 {
			b.namespaces = append(b.namespaces, fmt.Sprintf("%s-%04d", prefix, i/perNamespace))
		}
		b.backends = append(b.backends, types.NamespacedName{
			Namespace: b.namespaces[len(b.namespaces)-1],
			Name:      fmt.Sprintf("hb-%05d", i),
		})
	}
	return b
}

// passwordSecretName is the name of a backend's password Secret.
func passwordSecretName(backend string) string { return backend + "-password" }

// newPasswordSecret returns the password Secret of backend key.
func newPasswordSecret(key types.NamespacedName) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: passwordSecretName(key.Name)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{passwordKey: []byte(statePassword)},
	}
}

// newBackend returns backend key: its own state at the state server
// stateURL, basic auth with the password of its own Secret, and no
// spec.probe, so that the manager's --default-probe-interval applies.
func newBackend(key types.NamespacedName, stateURL string) *backendsv1alpha1.HttpBackend {
	return &backendsv1alpha1.HttpBackend{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: backendsv1alpha1.HttpBackendSpec{
			Address:           stateURL + statePath(key),
			Username:          stateUser,
			PasswordSecretRef: &backendsv1alpha1.SecretKeyRef{Name: passwordSecretName(key.Name), Key: passwordKey},
		},
	}
}

// statePath is the path of backend key's state on the state server:
// "/state/<namespace>-<name>" (see batchOfStatePath).
func statePath(key types.NamespacedName) string { return "/state/" + key.Namespace + "-" + key.Name }

// createNamespaces creates the namespaces named; existing ones are kept.
func createNamespaces(ctx context.Context, c client.Client, workers int, names []string) error {
	return parallel(ctx, workers, len(names), func(ctx context.Context, i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", names[i], err)
		}
		return nil
	})
}

// createBackends creates each backend's password Secret and then the
// backend, from workers goroutines, and returns the time just before the
// first create was sent. labels, when not nil, gives each backend its
// labels.
func createBackends(ctx context.Context, c client.Client, workers int, keys []types.NamespacedName, stateURL string,
	labels func(types.NamespacedName) map[string]string,
) (time.Time, error) {
	start := time.Now()
	err := parallel(ctx, workers, len(keys), func(ctx context.Context, i int) error {
		b := newBackend(keys[i], stateURL)
		if labels != nil {
			b.Labels = labels(keys[i])
		}
		return createBackend(ctx, c, b)
	})
	return start, err
}

// createBackend creates backend b's password Secret, then b.
func createBackend(ctx context.Context, c client.Client, b *backendsv1alpha1.HttpBackend) error {
	key := client.ObjectKeyFromObject(b)
	if err := c.Create(ctx, newPasswordSecret(key)); err != nil {
		return fmt.Errorf("creating the password Secret of %s: %w", key, err)
	}
	if err := c.Create(ctx, b); err != nil {
		return fmt.Errorf("creating HttpBackend %s: %w", key, err)
	}
	return nil
}

// unrelatedPerNamespace is the number of unrelated objects of one kind in
// each of their namespaces.
const unrelatedPerNamespace = 1000

// unrelatedData is the 1 KiB of data of each unrelated object.
var unrelatedData = bytes.Repeat([]byte("x"), 1024)

// createUnrelated creates secrets Secrets and configMaps ConfigMaps with
// 1 KiB of data each, which no backend references, in namespaces
// "unrelated-NNNN" of their own.
func createUnrelated(ctx context.Context, c client.Client, workers, secrets, configMaps int) error {
	nsOf := func(i int) string { return fmt.Sprintf("unrelated-%04d", i/unrelatedPerNamespace) }
	var names []string
	for i := range max(secrets, configMaps) {
		if i%unrelatedPerNamespace == 0 {
			names = append(names, nsOf(i))
		}
	}
	if err := createNamespaces(ctx, c, workers, names); err != nil {
		return err
	}
	err := parallel(ctx, workers, secrets, func(ctx context.Context, i int) error {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: nsOf(i), Name: fmt.Sprintf("unrelated-%06d", i)},
			Data:       map[string][]byte{"data": unrelatedData},
		}
		if err := c.Create(ctx, s); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return parallel(ctx, workers, configMaps, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: nsOf(i), Name: fmt.Sprintf("unrelated-%06d", i)},
			Data:       map[string]string{"data": string(unrelatedData)},
		}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		return nil
	})
}

// deleteNamespaceContents deletes every HttpBackend, ConfigMap and Secret
// of the namespaces named. envtest runs no namespace controller and no
// garbage collector, so neither deleting a namespace nor deleting a
// backend would remove them.
func deleteNamespaceContents(ctx context.Context, c client.Client, workers int, names []string) error {
	return parallel(ctx, workers, len(names), func(ctx context.Context, i int) error {
		for _, obj := range []client.Object{&backendsv1alpha1.HttpBackend{}, &corev1.ConfigMap{}, &corev1.Secret{}} {
			if err := c.DeleteAllOf(ctx, obj, client.InNamespace(names[i])); err != nil {
				return fmt.Errorf("deleting the %T objects of namespace %s: %w", obj, names[i], err)
			}
		}
		return nil
	})
}
