// Command kafkaserver runs kfake, franz-go's in-memory Kafka cluster that
// speaks the real protocol over TCP, as a process of its own: the
// multi-instance test (tests/e2e/many_test.go) and the bench scripts
// share it between linkd processes as they would share a Kafka. It prints
// the brokers' address on its first line and serves until SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port of the broker (0: any free one)")
	flag.Parse()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if *port != 0 {
		opts = append(opts, kfake.Ports(*port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkaserver:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println(strings.Join(c.ListenAddrs(), ","))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
