terraform {
  backend "http" {
    address  = "https://state.example.com/state/app"
    username = "q\"uote\\back\\\\slash\nnew\r\ttab $${x} %%{ if true }y%%{ endif } $$${lit} %%%{lit} end$ end% {} ü日本🙂 <&>"
  }
}
