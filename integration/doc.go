// Package integration holds the tests that span recipes and processes; its
// subpackage zktest runs the real ZooKeeper servers every test uses.
package integration
