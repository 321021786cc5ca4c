// Package nslabels watches the labels of the cluster's namespaces, for
// metadata only, where the manager may list and watch namespaces: what
// OutputGrants' namespace selectors match. A manager that may not (one
// that watches some namespaces with Roles only) never asks, so that the
// API server never denies it a request; it holds no labels and says why.
// It knows no kind of the API and never imports the controllers.
package nslabels
