package controllers

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/probes"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/conformance"
	"github.com/infrastate/backend-operator/internal/render"
)

// +kubebuilder:rbac:groups=backends.infrastate.io,resources=httpbackends,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=httpbackends/status,verbs=patch
// +kubebuilder:rbac:groups=backends.infrastate.io,resources=httpbackends/finalizers,verbs=update

// httpKind is the HttpBackend kind: a Terraform REST state backend, read
// and locked through internal/stateclient.
type httpKind struct{}

func (httpKind) name() string                           { return backendsv1alpha1.HttpBackendKind }
func (httpKind) newObject() backendObject               { return &backendsv1alpha1.HttpBackend{} }
func (httpKind) newList() client.ObjectList             { return &backendsv1alpha1.HttpBackendList{} }
func (httpKind) readyGates() []string                   { return []string{backendsv1alpha1.StateReachableCondition} }
func (httpKind) failures() []failureClass               { return httpFailures }
func (httpKind) configMapName(obj backendObject) string { return httpBackend(obj).Spec.ConfigMapName }
func (httpKind) checkSpec(obj backendObject) error      { return checkHTTPSpec(httpBackend(obj).Spec) }

func (httpKind) probeSpec(obj backendObject) *backendsv1alpha1.ProbeSpec {
	if p := httpBackend(obj).Spec.Probe; p != nil {
		return &p.ProbeSpec
	}
	return nil
}

// references are the password Secret, the client certificate Secret and
// the CA bundle's Secret or ConfigMap.
func (httpKind) references(obj backendObject) []string {
	spec := httpBackend(obj).Spec
	var refs []string
	if ref := spec.PasswordSecretRef; ref != nil {
		refs = append(refs, related.SecretReference(ref.Name))
	}
	if tls := spec.TLS; tls != nil {
		if ref := tls.ClientCertificateSecretRef; ref != nil {
			refs = append(refs, related.SecretReference(ref.Name))
		}
		if ca := tls.CACertificate; ca != nil && ca.SecretRef != nil {
			refs = append(refs, related.SecretReference(ca.SecretRef.Name))
		}
		if ca := tls.CACertificate; ca != nil && ca.ConfigMapRef != nil {
			refs = append(refs, related.ConfigMapReference(ca.ConfigMapRef.Name))
		}
	}
	return append(refs, encryptionReferences(spec.Encryption)...)
}

// httpBackend is obj, an object of httpKind, as an HttpBackend.
func httpBackend(obj backendObject) *backendsv1alpha1.HttpBackend {
	return obj.(*backendsv1alpha1.HttpBackend)
}

// resolve reads the password, the client certificate and key (which must
// match), the CA bundle (at least one certificate) and the passphrases,
// and reports every problem among them at once (see joinStalls).
func (httpKind) resolve(ctx context.Context, env kindEnv, obj backendObject) (resolvedBackend, error) {
	backend := httpBackend(obj)
	secrets, secretsErr := resolveHTTPSecrets(ctx, env.refs, backend)
	encryption, encryptionErr := resolveEncryption(ctx, env.refs, backend.Spec.Encryption)
	if err := conditions.JoinStalls(secretsErr, encryptionErr); err != nil {
		return nil, err
	}
	return &httpResolved{backend: backend, secrets: secrets, encryption: encryption, env: env}, nil
}

// httpResolved is an HttpBackend with its credential material.
type httpResolved struct {
	backend    *backendsv1alpha1.HttpBackend
	secrets    render.HTTPSecrets
	encryption *stateEncryption
	env        kindEnv
}

func (h *httpResolved) inputs() [][]byte {
	s := h.secrets
	return append([][]byte{s.Password, s.ClientCertificatePEM, s.ClientPrivateKeyPEM, s.ClientCACertificatePEM}, h.encryption.inputs()...)
}

func (h *httpResolved) render() (render.Files, map[string][]byte, error) {
	files, err := render.HTTPFiles(h.backend.Spec)
	if err != nil {
		return files, nil, err
	}
	credentials := render.HTTPCredentials(h.secrets)
	return files, credentials, h.encryption.addEnv(credentials)
}

func (h *httpResolved) decrypter() stateDecrypter {
	return stateDecrypter{encryption: h.encryption, decryptions: h.env.decryptions, derivations: h.env.derivations, namespace: h.env.tenant}
}

// openState reads the state through the backend's own address,
// credentials, TLS and retry settings. The http backend has one
// workspace.
func (h *httpResolved) openState(string) (stateStreamer, error) {
	sc, err := h.stateClient()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, read func(io.Reader) error) (bool, int64, error) {
		defer sc.CloseIdleConnections()
		return sc.StreamState(ctx, read)
	}, nil
}

// lockOwnerKind is the kind of the object a locker takes the lock for, as
// its lock check's Who names it.
func lockOwnerKind(owner client.Object) string {
	if _, ok := owner.(*backendsv1alpha1.StateRestore); ok {
		return backendsv1alpha1.StateRestoreKind
	}
	return backendsv1alpha1.StateLockKind
}

// writer writes the state as Terraform does, with ?ID=<lock ID> while the
// lock is held.
func (h *httpResolved) writer(string) (stateWriter, error) {
	sc, err := h.stateClient()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, lockID string, body io.ReadSeeker, size int64, md5sum [16]byte) error {
		defer sc.CloseIdleConnections()
		return sc.UpdateFrom(ctx, lockID, body, size, md5sum)
	}, nil
}

// locker locks the state through lockAddress and unlockAddress; without
// both the state cannot be locked (LockingDisabled), nor on a server that
// does not lock or whose release the operator cannot make (status.server,
// LockingUnsupported). It reads the holder with a lock check of its own
// (see httpLocker.holder), and checks and releases the StateLock's lock as
// the server's features allow (see conformance.Decide).
func (h *httpResolved) locker(_ string, owner client.Object) (stateLocker, error) {
	if h.backend.Spec.LockAddress == "" || h.backend.Spec.UnlockAddress == "" {
		return nil, conditions.Stall(backendsv1alpha1.LockingDisabledReason, "HttpBackend %s cannot be locked: %v", h.backend.Name, errLockingDisabled)
	}
	features := h.lockFeatures()
	if !features.Release.Allowed {
		return nil, conditions.Stall(backendsv1alpha1.LockingUnsupportedReason, "HttpBackend %s cannot be locked by a StateLock: %s (see its status.server)",
			h.backend.Name, features.Release.Reason)
	}
	sc, err := h.stateClient()
	if err != nil {
		return nil, conditions.Stall(backendsv1alpha1.BackendNotReadyReason, "HttpBackend %s cannot be used: %v", h.backend.Name, err)
	}
	return &httpLocker{sc: sc, features: features, checkRun: httpProbeRun{
		clock:     h.env.clock,
		checkLock: true,
		lockID:    lockCheckID(owner.GetUID()),
		created:   owner.GetCreationTimestamp().Time,
		who:       fmt.Sprintf("backend-operator lock check of %s %s/%s", lockOwnerKind(owner), owner.GetNamespace(), owner.GetName()),
		info: "Taken by backend-operator to check that a StateLock still holds the lock, and released at once; " +
			"if it stays, the operator releases it at its next check.",
	}}, nil
}

// lockWaiting says what a StateLock waits for before it takes the lock:
// the backend's probe must first learn what the state server does with
// locks (status.server), which decides how the lock is checked and
// released. Once learned, with any credentials, nothing.
func (h *httpResolved) lockWaiting() string {
	spec := h.backend.Spec
	if h.backend.Status.Server != nil || spec.LockAddress == "" || spec.UnlockAddress == "" {
		return ""
	}
	return fmt.Sprintf("Waiting for HttpBackend %s to learn what its state server does with locks (status.server) before taking its lock: "+
		"it checks with a lock of its own while the state is free, every %s until it has", h.backend.Name, learnRetry)
}

// lockFeatures are what the lock features may do on the backend's state
// server: as status.server tells, learned with the current credentials or
// earlier ones (a server that locked one way yesterday still does). A
// server never learned only has locks a StateLock took before the
// operator learned servers: they are released as Terraform releases its
// own (the exact LockInfo, while no loss was seen), and never reported
// lost.
func (h *httpResolved) lockFeatures() conformance.Features {
	if h.backend.Status.Server != nil {
		return conformance.Decide(behaviourOf(h.backend.Status.Server))
	}
	return conformance.Unchecked()
}

// stateClient builds the backend's state client.
func (h *httpResolved) stateClient() (stateClient, error) {
	sc, err := h.env.stateClients(stateClientConfig(h.backend.Spec, h.secrets), h.env.log.WithName("stateclient"))
	if err != nil {
		return nil, fmt.Errorf("building a state client: %w", err)
	}
	return sc, nil
}

// probe reads the state, and with probe.lockCheck or forceUnlock learns
// the lock holder and releases the lock forceUnlock names, or lockPolicy
// a gone holder's; with probing disabled only the lock work is left.
func (h *httpResolved) probe(interval time.Duration, lockUsers bool) probePlan {
	backend := h.backend
	plan := probePlan{condition: backendsv1alpha1.StateReachableCondition}
	lockWork := (backend.Spec.Probe != nil && backend.Spec.Probe.LockCheck) || backend.Spec.ForceUnlock != nil
	if !lockWork {
		plan.lockUnchecked = "spec.probe.lockCheck is off, and the REST protocol shows a lock's holder only to a lock attempt. " +
			"Set probe.lockCheck to true (with lockAddress and unlockAddress) to see every holder."
	}
	// Every lock feature first learns what the server does with locks
	// (status.server), with the operator's own lock.
	checkedWith := serverCheckInputs(backend.Spec, h.secrets)
	server, known := knownServer(backend.Status.Server, checkedWith)
	learn := (lockWork || lockUsers) && !known && backend.Spec.LockAddress != "" && backend.Spec.UnlockAddress != ""
	if interval == 0 {
		plan.off = probeDisabled()
		if !lockWork && !learn {
			return plan
		}
	}
	// The probe's settings, with the holder check's copy of status.lock
	// and status.holderPod, are built when it is submitted (see
	// advanceProbe), not at every reconcile.
	plan.start = func() (probes.Func, error) {
		sc, err := h.stateClient()
		if err != nil {
			return nil, conditions.Stall(backendsv1alpha1.InvalidSpecReason, "Cannot build a state client: %v", err)
		}
		run := httpProbeRun{
			fetch:       interval > 0,
			decrypter:   h.decrypter(),
			learnServer: learn,
			// On a server that creates a state on LOCK, the check waits
			// for the state to exist, unless StateLocks wait for it: their
			// own LOCK would create it all the same.
			learnWhenStateExists: !lockUsers && mayCreateOnLock(backend.Spec.Address),
			checkLock:            lockWork,
			forceUnlock:          forceUnlockID(backend.Spec.ForceUnlock),
			metrics:              h.env.metrics,
			clock:                h.env.clock,
			holder:               newHolderCheck(h.env, backend, backend.Spec.LockPolicy),
			lockID:               lockCheckID(backend.UID),
			created:              backend.CreationTimestamp.Time,
			who:                  fmt.Sprintf("backend-operator lock check of HttpBackend %s/%s", backend.Namespace, backend.Name),
			info: "Taken by backend-operator to learn who holds the lock (spec.probe.lockCheck or spec.forceUnlock) " +
				"and released at once; if it stays, the operator releases it at its next probe.",
		}
		if known {
			run.server = &server
		}
		log := h.env.log
		return func(ctx context.Context) any {
			// The next probe is an interval away: no connection waits
			// idle for it, in the manager or in the server.
			defer sc.CloseIdleConnections()
			return runHTTPProbe(ctx, sc, run, log)
		}, nil
	}
	plan.apply = func(value any, finished time.Time) {
		applyHTTPProbe(h.env.metrics, backend, value.(httpProbeResult), checkedWith, finished)
	}
	plan.lockPolicy = backend.Spec.LockPolicy
	plan.learnPending = learn && lockUsers
	return plan
}

// resolveHTTPSecrets reads and checks the credential material an
// HttpBackend references. Problems are stalls naming the object and
// key: SecretNotFound, SecretKeyMissing, ConfigMapNotFound,
// ConfigMapKeyMissing, InvalidCertificate; one reference's problem does
// not hide another's (see joinStalls).
func resolveHTTPSecrets(ctx context.Context, refs referenceReader, backend *backendsv1alpha1.HttpBackend) (render.HTTPSecrets, error) {
	var secrets render.HTTPSecrets
	var passwordErr, certErr, caErr error
	spec := backend.Spec
	if ref := spec.PasswordSecretRef; ref != nil {
		key := ref.Key
		if key == "" {
			key = backendsv1alpha1.DefaultPasswordKey
		}
		secrets.Password, passwordErr = refs.secretKey(ctx, ref.Name, key, "spec.passwordSecretRef", "spec.passwordSecretRef.key")
	}
	if tls := spec.TLS; tls != nil {
		if ref := tls.ClientCertificateSecretRef; ref != nil {
			secrets.ClientCertificatePEM, secrets.ClientPrivateKeyPEM, certErr = clientCertificate(ctx, refs, ref.Name)
		}
		if ca := tls.CACertificate; ca != nil {
			secrets.ClientCACertificatePEM, caErr = caBundle(ctx, refs, ca)
		}
	}
	return secrets, conditions.JoinStalls(passwordErr, certErr, caErr)
}

// clientCertificate reads the certificate and key of the
// kubernetes.io/tls Secret name, which must both be there and match.
func clientCertificate(ctx context.Context, refs referenceReader, name string) (cert, key []byte, err error) {
	const field = "spec.tls.clientCertificateSecretRef"
	secret, err := refs.secret(ctx, name, field)
	if err != nil {
		return nil, nil, err
	}
	pair, err := requiredKeys(secret, field, "", corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	if err != nil {
		return nil, nil, err
	}
	if err := checkKeyPair(pair[0], pair[1], fmt.Sprintf("Secret %s/%s", secret.Namespace, secret.Name)); err != nil {
		return nil, nil, err
	}
	return pair[0], pair[1], nil
}

// caBundle reads the CA bundle from its Secret or ConfigMap and checks
// that it holds certificates.
func caBundle(ctx context.Context, refs referenceReader, ca *backendsv1alpha1.CACertificateSource) ([]byte, error) {
	key := ca.Key
	if key == "" {
		key = backendsv1alpha1.DefaultCAKey
	}
	const field, keyField = "spec.tls.caCertificate", "spec.tls.caCertificate.key"
	var (
		bundle []byte
		where  string
		err    error
	)
	switch {
	case ca.SecretRef != nil:
		bundle, err = refs.secretKey(ctx, ca.SecretRef.Name, key, field, keyField)
		where = fmt.Sprintf("Secret %s/%s key %s", refs.namespace, ca.SecretRef.Name, key)
	case ca.ConfigMapRef != nil:
		bundle, err = refs.configMapKey(ctx, ca.ConfigMapRef.Name, key, field, keyField)
		where = fmt.Sprintf("ConfigMap %s/%s key %s", refs.namespace, ca.ConfigMapRef.Name, key)
	default:
		return nil, conditions.Stall(backendsv1alpha1.InvalidSpecReason, "The CA of %s is in neither a Secret nor a ConfigMap: set its secretRef or its configMapRef", field)
	}
	if err != nil {
		return nil, err
	}
	if err := checkCertificates(bundle, where); err != nil {
		return nil, err
	}
	return bundle, nil
}
