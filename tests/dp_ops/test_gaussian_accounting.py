import pytest

from dp_ops.gaussian_accounting import calibrate_gaussian_noise_multiplier, epsilon_of_gaussian_releases


@pytest.mark.parametrize("epsilon,delta,releases", [(4.0, 5e-7, 4), (1.0, 1e-6, 1), (0.5, 1e-8, 6), (10.0, 1e-5, 3)])
def test_calibrated_noise_spends_at_most_the_requested_epsilon_and_nearly_all_of_it(epsilon, delta, releases):
    z = calibrate_gaussian_noise_multiplier(epsilon, delta, releases)
    spent = epsilon_of_gaussian_releases(z, releases, delta)
    assert spent <= epsilon
    assert spent >= 0.97 * epsilon


def test_more_releases_need_more_noise():
    zs = [calibrate_gaussian_noise_multiplier(2.0, 1e-6, t) for t in (1, 2, 4, 8)]
    assert zs == sorted(zs) and zs[0] < zs[-1]


def test_single_release_matches_the_analytic_gaussian_mechanism():
    # Balle & Wang's analytic Gaussian: epsilon=1, delta=1e-5 needs sigma ~= 3.73 (sensitivity 1).
    z = calibrate_gaussian_noise_multiplier(1.0, 1e-5, 1)
    assert z == pytest.approx(3.73, rel=0.02)


@pytest.mark.parametrize("args", [(0, 1e-6, 1), (1.0, 0, 1), (1.0, 1.0, 1), (1.0, 1e-6, 0)])
def test_bad_arguments_are_rejected(args):
    with pytest.raises(ValueError):
        calibrate_gaussian_noise_multiplier(*args)
