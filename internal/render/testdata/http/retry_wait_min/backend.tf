terraform {
  backend "http" {
    address        = "https://state.example.com/state/app"
    retry_wait_min = 0
  }
}
