terraform {
  backend "http" {
    address        = "https://state.example.com/state/app"
    retry_wait_max = 120
  }
}
