"""The example corpus generator (`trialhouse example DIR`)."""
