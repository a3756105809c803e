"""The cost basis: pau.fleet.costs (TOML cost model, cost per useful output, the split)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pau.errors import ArgumentTypeError, NoInputError, PauError, SchemaError
from pau.fleet import costs as K

#: docs/fleet.md's example, checked by hand there.
MODEL = """
currency = "USD"

[defaults]
pue = 1.2
energy_price_per_kwh = 0.10

[accelerator.H100]
purchase_price = 30000
life_years = 5
nominal_power_w = 700
network_storage_fraction_of_capex = 0.15
operations_per_accelerator_hour = 0.10

[accelerator.A100]
purchase_price = 15000
life_years = 4
nominal_power_w = 400
network_storage_per_accelerator_hour = 0.05
operations_per_accelerator_hour = 0.08

[cluster.east]
pue = 1.5
network_storage_per_accelerator_hour = 0.02

[cluster.cloud-a]
contract_rate_per_accelerator_hour = 2.50

[cluster.colo]
contract_rate_per_accelerator_hour = 1.50
nominal_power_w = 700
pue = 1.3
energy_price_per_kwh = 0.20
"""

HOUR = 3_600 * 10**9


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "costs.toml"
    path.write_text(MODEL)
    return K.cost_model(path)


def test_the_hand_checked_example(model):
    r = model.rate(accelerator_type="H100")
    # by hand (docs/fleet.md): 30,000 / (5 x 8,760 h) = 0.684932 an hour
    assert r.capital == pytest.approx(30_000 / 43_800)
    assert r.power == pytest.approx(0.7 * 1.2 * 0.10)            # 0.084
    assert r.network_storage == pytest.approx(0.15 * 0.6849315068)  # 0.102740
    assert r.operations == 0.10
    assert r.per_accelerator_hour == pytest.approx(0.971671, abs=1e-6)
    assert r.capital_basis == "purchase" and r.currency == "USD"
    assert r.sections == ("defaults", "accelerator.H100")
    assert "straight-line over 5 years" in r.basis and "every hour of the life" in r.basis
    assert "nominal 700 W x PUE 1.2 x 0.1 USD/kWh" in r.parts_basis["power"]
    # per million delivered tokens at 1,000 tokens per accelerator-second: 0.971671 / 3.6
    f = K.per_million_tokens(r, 1_000)
    assert f.value == pytest.approx(0.269909, abs=1e-6)
    assert f.per == "million delivered tokens" and r.basis in f.basis


def test_the_same_model_from_a_dict(model):


    same = K.cost_model(K.tomllib.loads(MODEL))
    assert same.rate("A100") == model.rate("A100")


def test_measured_power_replaces_the_nominal_draw(model):
    r = model.rate("H100", measured_power_w=500)
    assert r.power == pytest.approx(0.5 * 1.2 * 0.10)
    assert r.parts_basis["power"].startswith("measured mean 500 W")


def test_a_cluster_refines_the_accelerator_type(model):
    r = model.rate("H100", cluster="east")
    assert r.sections == ("defaults", "accelerator.H100", "cluster.east")
    assert r.power == pytest.approx(0.7 * 1.5 * 0.10)
    # the cluster's per-hour share replaces the type's fraction of the depreciation
    assert r.network_storage == 0.02 and r.parts_basis["network_storage"] == "0.02 USD/accelerator-hour"
    # a cluster absent from the model: the type's section alone, and it says so
    assert model.rate("H100", cluster="nowhere").sections == ("defaults", "accelerator.H100")


def test_a_contract_rate_prices_the_hour_as_a_whole(model):
    r = model.rate("H100", cluster="cloud-a")
    assert (r.per_accelerator_hour, r.capital, r.power, r.network_storage, r.operations) == (2.5, 2.5, 0, 0, 0)
    assert r.capital_basis == "contract"
    assert r.parts_basis["power"] == "included in the contract rate"
    assert "not charged again" in model.rate(cluster="cloud-a", measured_power_w=600).parts_basis["power"]
    # power billed on top of a colocation contract
    c = model.rate(cluster="colo")
    assert c.power == pytest.approx(0.7 * 1.3 * 0.20)
    assert c.per_accelerator_hour == pytest.approx(1.50 + 0.182)


def err(text, **rate):
    m = K.cost_model(K.tomllib.loads(text))
    return m.rate(**(rate or {"accelerator_type": "X"}))


@pytest.mark.parametrize("text, match", [
    ("[accelerator.X]\npurchase_price = 1\nnominal_power_w = 1\npue = 1\nenergy_price_per_kwh = 1\n"
     "network_storage_per_accelerator_hour = 0\noperations_per_accelerator_hour = 0",
     r"\[accelerator.X\]: 'life_years' is missing.*Fix: add life_years"),
    ("[accelerator.X]\nlife_years = 4", r"'purchase_price' is missing.*contract_rate_per_accelerator_hour"),
    ("[accelerator.X]\npurchase_price = 1\nlife_years = 1\nnominal_power_w = 1\npue = 1\n"
     "energy_price_per_kwh = 1\noperations_per_accelerator_hour = 0", "network and storage share is missing"),
    ("[accelerator.X]\npurchase_price = 1\nlife_years = 1\npue = 1\nenergy_price_per_kwh = 1\n"
     "network_storage_per_accelerator_hour = 0\noperations_per_accelerator_hour = 0", "'nominal_power_w' is missing"),
    ("[accelerator.X]\npurchase_price = 1\nlife_years = 1\nnominal_power_w = 1\npue = 1\nenergy_price_per_kwh = 1\n"
     "network_storage_per_accelerator_hour = 0", "'operations_per_accelerator_hour' is missing"),
    ("[accelerator.X]\ncontract_rate_per_accelerator_hour = 2\npurchase_price = 1", "keep one basis"),
    ("[accelerator.X]\ncontract_rate_per_accelerator_hour = 2\nnetwork_storage_fraction_of_capex = 0.1",
     "needs a purchase price"),
    ("[accelerator.Y]\ncontract_rate_per_accelerator_hour = 2", r"no section \[accelerator.X\].*accelerator.Y"),
])
def test_missing_or_contradictory_keys_are_named_with_the_fix(text, match):
    with pytest.raises(PauError, match=match):
        err(text)


@pytest.mark.parametrize("text, match", [
    ("[accelerator.X]\npurchase_price = -5", r"\[accelerator.X\] purchase_price = -5: negative"),
    ("[accelerator.X]\nlife_years = 0", "life_years = 0: not positive"),
    ("[accelerator.X]\npue = 0.9", r"pue = 0.9: below 1"),
    ("[accelerator.X]\npurchase_prize = 5", r"purchase_prize: unknown key. Fix: use one of"),
    ("[accelerator.X]\npurchase_price = \"5\"", "not a number"),
    ("[accelerators.X]\npurchase_price = 5", "unknown section or key 'accelerators'"),
    ("currency = 5", "currency"),
    ("[accelerator]\n", "names no accelerator"),
])
def test_bad_values_are_refused_when_read(text, match):
    with pytest.raises(PauError, match=match):
        K.cost_model(K.tomllib.loads(text))


def test_files_that_do_not_parse_or_exist(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[accelerator.X\n")
    with pytest.raises(PauError, match="not valid TOML"):
        K.cost_model(bad)
    with pytest.raises(NoInputError, match="no such file"):
        K.cost_model(tmp_path / "missing.toml")
    with pytest.raises(PauError, match="needs an accelerator_type or a cluster"):
        K.cost_model({}).rate()


def test_cost_per_useful_output(model):
    r = model.rate("A100")
    # by hand: 15,000 / (4 x 8,760) + 0.4 x 1.2 x 0.10 + 0.05 + 0.08 = 0.428082 + 0.048 + 0.13
    assert r.per_accelerator_hour == pytest.approx(0.606082, abs=1e-6)
    assert K.per_preserved_step(r, 1_000, 2_000).value == pytest.approx(0.606082 / 2, abs=1e-6)
    assert K.per_trained_model(r, 1_000).value == pytest.approx(606.082, abs=1e-3)
    f = K.per_accepted_request(r, 1_000, 2_000_000)
    assert f.value == pytest.approx(0.606082 * 1_000 / 2e6, rel=1e-6) and f.per == "accepted request"
    assert "1000 accelerator-hours" in f.basis and r.basis in f.basis
    # no output: no cost per output, never zero or inf
    assert K.per_preserved_step(r, 1_000, 0).value is None
    assert K.per_million_tokens(r, 0).value is None
    with pytest.raises(ArgumentTypeError, match="basis") as info:
        K.per_preserved_step(2.5, 1, 1)
    assert isinstance(info.value, TypeError) and isinstance(info.value, PauError)
    with pytest.raises(PauError, match="accelerator_hours"):
        K.per_preserved_step(r, -1, 1)


def test_split_by_state_conserves_the_cost(model):
    r = model.rate("H100")
    ns = {"productive": 70 * HOUR, "rolled_back": 10 * HOUR, "recovery.outage": 3 * HOUR,
          "recovery.restore": 2 * HOUR, "unattributed": 10 * HOUR, "checkpoint": 4 * HOUR, "eval": HOUR}
    s = K.split_by_state(r, ns)
    rate = r.per_accelerator_hour
    assert s.productive == pytest.approx(70 * rate)
    assert s.rolled_back == pytest.approx(10 * rate)
    assert s.recovery == pytest.approx(5 * rate)
    assert s.idle == pytest.approx(10 * rate)
    assert s.overhead == pytest.approx(5 * rate)
    assert s.total == pytest.approx(100 * rate)
    assert s.productive + s.rolled_back + s.recovery + s.idle + s.overhead == pytest.approx(s.total, rel=1e-12)
    # the same from a table of cells (several rows per state, dictionary-coded states)
    cells = pa.table({"state": pa.array(["productive", "productive", "unattributed"]).dictionary_encode(),
                      "activity": ["compute", "idle", "idle"],
                      "duration_ns": [HOUR, HOUR, 2 * HOUR]})
    t = K.split_by_state(r, cells)
    assert t.productive == pytest.approx(2 * rate) and t.idle == pytest.approx(2 * rate)
    assert t.by_state == pytest.approx({"productive": 2 * rate, "unattributed": 2 * rate})


def test_split_refuses_what_it_cannot_account(model):
    r = model.rate("H100")
    with pytest.raises(PauError, match="unknown state 'busy'"):
        K.split_by_state(r, {"busy": 1})
    with pytest.raises(PauError, match="whole nanoseconds"):
        K.split_by_state(r, {"productive": 1.5})
    with pytest.raises(SchemaError, match="duration_ns"):
        K.split_by_state(r, pa.table({"state": ["productive"]}))
    with pytest.raises(PauError, match="row 1: negative"):
        K.split_by_state(r, pa.table({"state": ["productive"] * 2, "duration_ns": [1, -1]}))
