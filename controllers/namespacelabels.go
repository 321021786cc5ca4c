package controllers

import (
	"errors"
	"fmt"

	"github.com/infrastate/backend-operator/controllers/internal/nslabels"
)

// namespaceLabeler gives the labels of a namespace as the manager sees
// them; an error wrapping nslabels.ErrUnknown says why they are unknown.
type namespaceLabeler interface {
	Labels(namespace string) (map[string]string, error)
}

// noNamespaceLabels is the labeler of a reconciler set up without the
// watch of namespaces: every namespace's labels are unknown.
type noNamespaceLabels struct{}

// errLabelsNotWatched is why noNamespaceLabels knows no labels.
var errLabelsNotWatched = errors.New("the manager does not watch namespaces")

func (noNamespaceLabels) Labels(string) (map[string]string, error) {
	return nil, fmt.Errorf("%w: %w", nslabels.ErrUnknown, errLabelsNotWatched)
}
