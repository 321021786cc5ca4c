terraform {
  backend "http" {
    address       = "https://state.example.com/state/app"
    future_string = "q\"uote\\back\nnew $${x} %%{ if } $$${lit} ü🙂 \u2028"
  }
}
