import numpy as np
import pytest

from mechanisms.linalg import (
    orthonormalize,
    random_orthonormal,
    symmetric_gaussian,
    top_k_eigenvectors,
)
from mechanisms.metrics import (
    normalised_utility,
    optimal_q_F,
    principal_angles,
    projector_distance,
    projector_distance_frobenius,
    q_A,
    q_F,
)


def test_q_F_on_diagonal_matrix():
    A = np.diag([3.0, 2.0, 1.0, 0.5])
    V = np.eye(4)[:, [0, 2]]
    assert q_F(V, A) == pytest.approx(4.0)
    assert optimal_q_F(A, 2) == pytest.approx(5.0)
    assert normalised_utility(V, A) == pytest.approx(0.8)


def test_q_F_is_rotation_invariant_within_subspace(rng):
    A = np.diag([3.0, 2.0, 1.0, 0.5])
    V = np.eye(4)[:, :2]
    R = orthonormalize(rng.standard_normal((2, 2)))
    assert q_F(V @ R, A) == pytest.approx(5.0)


def test_q_A_known_angle():
    A = np.diag([2.0, 1.0, 0.0])
    theta = 0.3
    v = np.array([np.cos(theta), np.sin(theta), 0.0])
    assert q_A(v, A) == pytest.approx(np.cos(theta))
    assert q_A(-v, A) == pytest.approx(np.cos(theta))


def test_principal_angles_and_projector_distance():
    U = np.eye(3)[:, :2]
    theta = 0.4
    V = np.array([[1, 0], [0, np.cos(theta)], [0, np.sin(theta)]])
    ang = principal_angles(U, V)
    assert np.allclose(np.sort(ang), [0.0, theta])
    assert projector_distance(U, V) == pytest.approx(np.sin(theta))
    P = U @ U.T - V @ V.T
    assert projector_distance(U, V) == pytest.approx(np.linalg.norm(P, 2))
    assert projector_distance_frobenius(U, V) == pytest.approx(np.linalg.norm(P, "fro"))


@pytest.mark.parametrize("theta", [1e-14, 1e-10, 1e-7, 0.7, 0.8, 1.2, np.pi / 2])
def test_principal_angles_accurate_at_every_size(theta):
    """Exact to rounding at tiny angles, where arccos of the cosine would give 0 or about 1e-8 (it
    cannot resolve a cosine within 1e-16 of 1), on both sides of π/4 and at π/2."""
    U = np.eye(4)[:, :3]
    V = np.array([[1, 0], [0, np.cos(theta)], [0, 0], [0, np.sin(theta)]])
    ang = principal_angles(U, V)
    np.testing.assert_allclose(ang, [0.0, theta], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(principal_angles(V, U), ang)  # the order of the arguments is free
    assert projector_distance(U[:, 1:2], V[:, 1:2]) == pytest.approx(np.sin(theta), rel=1e-12)


def test_principal_angles_of_random_subspaces_match_the_cosines(rng):
    """Away from 0, the angles agree with arccos of the singular values of UᵀV."""
    U = random_orthonormal(7, 4, rng)
    V = random_orthonormal(7, 3, rng)
    expected = np.arccos(np.clip(np.linalg.svd(U.T @ V, compute_uv=False), -1, 1))
    np.testing.assert_allclose(principal_angles(U, V), expected, rtol=1e-10)


def test_top_k_eigenvectors_order_and_sign(rng):
    Q = random_orthonormal(5, 5, rng)
    A = Q @ np.diag([5, 4, 3, 2, 1.0]) @ Q.T
    V = top_k_eigenvectors(A, 2)
    assert np.allclose(np.abs(V.T @ Q[:, :2]), np.eye(2), atol=1e-10)
    assert np.all(V[np.argmax(np.abs(V), axis=0), [0, 1]] > 0)


def test_symmetric_gaussian_entry_law(rng):
    """Every entry N_ij, i <= j, has variance scale² (diagonal included). 200 draws of a 30x30 matrix:
    465 upper entries x 200 = 93,000 samples, relative s.e. of a variance sqrt(2/93000) = 0.5%; 3% tolerance."""
    d, scale = 30, 0.7
    draws = np.stack([symmetric_gaussian(d, scale, rng) for _ in range(200)])
    assert np.allclose(draws, draws.transpose(0, 2, 1))
    iu = np.triu_indices(d, 1)
    off = draws[:, iu[0], iu[1]].ravel()
    diag = draws[:, np.arange(d), np.arange(d)].ravel()
    assert off.var() == pytest.approx(scale**2, rel=0.03)
    # 6,000 diagonal samples: relative s.e. 1.8%; 8% tolerance (4.4 s.e.)
    assert diag.var() == pytest.approx(scale**2, rel=0.08)
