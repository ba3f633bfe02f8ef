package natsserver_test

import (
	"fmt"
	"os"

	"github.com/batonhq/baton/natsserver"
)

// An embedded server with no socket: clients connect in-process.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "baton-nats")
	defer os.RemoveAll(dir)
	srv, err := natsserver.Start(natsserver.Config{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	nc, err := srv.Connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	fmt.Printf("connected: %v, address: %q\n", nc.IsConnected(), srv.URL())
	// Output:
	// connected: true, address: ""
}
