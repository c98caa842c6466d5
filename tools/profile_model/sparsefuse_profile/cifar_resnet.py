"""The seed code's CIFAR-100 ResNet-50 (the weiaicunzai/pytorch-cifar100
layout, written here from its description in tools/gen_traces.py): a 3x3
stride-1 stem without max-pool, Sequential blocks named residual_function and
shortcut, 100 classes. Parameter names and shapes equal traces/resnet50-cifar100.json.
"""
from torch import nn


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, c_in, planes, stride, device):
        super().__init__()
        out = planes * self.expansion
        self.residual_function = nn.Sequential(
            nn.Conv2d(c_in, planes, 1, bias=False, device=device),
            nn.BatchNorm2d(planes, device=device),
            nn.ReLU(inplace=True),
            nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False, device=device),
            nn.BatchNorm2d(planes, device=device),
            nn.ReLU(inplace=True),
            nn.Conv2d(planes, out, 1, bias=False, device=device),
            nn.BatchNorm2d(out, device=device),
        )
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, out, 1, stride=stride, bias=False, device=device),
                nn.BatchNorm2d(out, device=device),
            )

    def forward(self, x):
        return (self.residual_function(x) + self.shortcut(x)).relu()


class CifarResNet50(nn.Module):
    def __init__(self, classes=100, device=None):
        super().__init__()
        self.conv1 = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1, bias=False, device=device),
            nn.BatchNorm2d(64, device=device),
            nn.ReLU(inplace=True),
        )
        c_in = 64
        for stage, (blocks, planes, stride) in enumerate(((3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2))):
            layers = []
            for b in range(blocks):
                layers.append(_Bottleneck(c_in, planes, stride if b == 0 else 1, device))
                c_in = planes * _Bottleneck.expansion
            setattr(self, f"conv{stage + 2}_x", nn.Sequential(*layers))
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c_in, classes, device=device)

    def forward(self, x):
        x = self.conv1(x)
        for stage in range(2, 6):
            x = getattr(self, f"conv{stage}_x")(x)
        return self.fc(self.avg_pool(x).flatten(1))
