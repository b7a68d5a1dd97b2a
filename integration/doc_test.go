// Package integration_test runs whole SQL pipelines against real
// dependencies over the network: Kafka through kfake over TCP, read back by
// independent franz-go clients.
package integration_test
