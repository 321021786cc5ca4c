package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/render"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// floor is the least a controller must do for each backend: an informer
// on HttpBackends, a rate-limited work queue and as many workers as the
// manager has, each reading a backend's password Secret from the API
// server, creating its ConfigMap and credentials Secret with the content
// the operator renders, reading the state once as the operator's probe
// does (one GET through internal/stateclient, over one keep-alive
// transport shared by every backend), and patching its status once with what the API says a new
// backend's status holds (see floorStatusPatch). It never reads what it
// wrote and never retries a write that succeeded.
type floor struct {
	cache  cache.Cache
	client client.Client
	// states carries every backend's state read, kept alive across
	// backends (see floorProbe).
	states http.RoundTripper
	queue  workqueue.TypedRateLimitingInterface[types.NamespacedName]
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startFloor starts the floor with cfg (used as given: pass it
// unthrottled, as the manager's) and workers workers, and returns once its
// informer has synced.
func startFloor(ctx context.Context, cfg *rest.Config, workers int) (*floor, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: testenv.Scheme(), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, fmt.Errorf("creating the floor's cache: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating the floor's client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &floor{
		cache: c, client: cl, cancel: cancel, states: http.DefaultTransport.(*http.Transport).Clone(),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
	}
	inf, err := c.GetInformer(ctx, &backendsv1alpha1.HttpBackend{})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating the floor's informer: %w", err)
	}
	enqueue := func(obj any) {
		if b, ok := obj.(*backendsv1alpha1.HttpBackend); ok && !isReady(b) {
			f.queue.Add(types.NamespacedName{Namespace: b.Namespace, Name: b.Name})
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("watching HttpBackends for the floor: %w", err)
	}
	f.wg.Go(func() {
		if err := c.Start(ctx); err != nil {
			log.Printf("floor: cache stopped: %v", err)
		}
	})
	if !c.WaitForCacheSync(ctx) {
		f.stop()
		return nil, fmt.Errorf("the floor's cache did not sync: %w", ctx.Err())
	}
	for range workers {
		f.wg.Go(func() {
			for f.processNext(ctx) {
			}
		})
	}
	return f, nil
}

// stop stops the workers and the informer and waits for them.
func (f *floor) stop() {
	f.cancel()
	f.queue.ShutDown()
	f.wg.Wait()
}

// processNext handles one key of the queue; it returns false once the
// queue is shut down.
func (f *floor) processNext(ctx context.Context) bool {
	key, shutdown := f.queue.Get()
	if shutdown {
		return false
	}
	defer f.queue.Done(key)
	if err := f.reconcile(ctx, key); err != nil {
		if ctx.Err() == nil {
			log.Printf("floor: %s: %v", key, err)
		}
		f.queue.AddRateLimited(key)
		return true
	}
	f.queue.Forget(key)
	return true
}

// reconcile does the floor's work for one backend.
func (f *floor) reconcile(ctx context.Context, key types.NamespacedName) error {
	b := &backendsv1alpha1.HttpBackend{}
	if err := f.cache.Get(ctx, key, b); err != nil {
		return client.IgnoreNotFound(err)
	}
	if isReady(b) {
		return nil
	}
	ref := b.Spec.PasswordSecretRef
	if ref == nil {
		return fmt.Errorf("HttpBackend %s has no passwordSecretRef", key)
	}
	password := &corev1.Secret{}
	if err := f.client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: ref.Name}, password); err != nil {
		return fmt.Errorf("reading the password Secret: %w", err)
	}
	cm, secret, runners, err := floorObjects(b, password.Data[ref.Key])
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{secret, cm} {
		if err := f.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	state, err := floorProbe(ctx, f.states, b, password.Data[ref.Key])
	if err != nil {
		return err
	}
	rendered := backendsv1alpha1.RenderedObjects{CompatibleRunners: runners, ConfigMapName: cm.Name, SecretName: secret.Name}
	patch, err := floorStatusPatch(b, rendered, state, metav1.NewTime(time.Now().Truncate(time.Second)))
	if err != nil {
		return err
	}
	// The answer is read as metadata, as the operator reads it (the
	// API server sends it as protobuf): the floor needs none of it.
	answer := &metav1.PartialObjectMetadata{}
	answer.SetGroupVersionKind(backendsv1alpha1.GroupVersion.WithKind(backendsv1alpha1.HttpBackendKind))
	answer.SetNamespace(b.Namespace)
	answer.SetName(b.Name)
	if err := f.client.Status().Patch(ctx, answer, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching the status: %w", err)
	}
	return nil
}

// floorObjects renders a backend's ConfigMap and credentials Secret as
// the operator does: internal/render's files, credentials, names, labels
// and controller reference, and the content-hash annotation the operator
// adds (controllers/owned.go), computed the same way so that the objects
// are byte for byte the operator's. It also returns the runners that read
// the files, for status.rendered.
func floorObjects(b *backendsv1alpha1.HttpBackend, password []byte) (*corev1.ConfigMap, *corev1.Secret, []backendsv1alpha1.CompatibleRunner, error) {
	files, err := render.HTTPFiles(b.Spec)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("rendering HttpBackend %s/%s: %w", b.Namespace, b.Name, err)
	}
	owner := render.Owner{
		APIVersion: backendsv1alpha1.GroupVersion.String(), Kind: "HttpBackend",
		Name: b.Name, Namespace: b.Namespace, UID: b.UID,
	}
	cmName := b.Spec.ConfigMapName
	if cmName == "" {
		cmName = render.DefaultConfigMapName(b.Name)
	}
	cm := render.ConfigMap(owner, cmName, files)
	secret := render.CredentialsSecret(owner, render.CredentialsSecretName(b.Name), render.HTTPCredentials(render.HTTPSecrets{Password: password}))
	cm.Annotations = map[string]string{contenthash.Annotation: contenthash.ConfigMap(cm.Data, nil)}
	secret.Annotations = map[string]string{contenthash.Annotation: contenthash.Secret(secret.Data)}
	return cm, secret, render.Compatible(files.Needs), nil
}
