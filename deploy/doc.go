// Package deploy holds no code: it is the home of the deployment files
// (Dockerfile, compose files, HAProxy configuration, Kubernetes manifests)
// and of the test that reads them and checks what a deployment of many
// linkd instances relies on (deploy_test.go).
package deploy
