package main

import (
	"context"
	"os"
)

func Example() {
	if err := run(context.Background(), os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// req-1: COMPLETED after 9 steps
	//   handoffs: orchestrator->client_data, client_data->flight_search, flight_search->proposal_analysis, proposal_analysis->communication, communication->error_monitor, error_monitor->communication
	// req-2: COMPLETED after 6 steps
	//   handoffs: orchestrator->flight_search, flight_search->proposal_analysis, proposal_analysis->communication
}
