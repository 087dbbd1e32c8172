"""The simulated lab (ROS-free): a clock that can run faster than real time, a subject
model, a face renderer and the arm, shared by the simulated drivers through one
``SimWorld``. Import the pieces from their modules (``sim.world.SimWorld``)."""
